package main

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack"
)

func TestParseUpLeavesFlagsNotGivenZero(t *testing.T) {
	opts, err := parseUp(nil, flag.ContinueOnError)
	require.NoError(t, err)
	require.Equal(t, devstack.Options{}, opts, "nothing given: defaults for a new stack, what runs for a running one")

	opts, err = parseUp([]string{"-cells", "3", "-grpc-port", "7000", "-replicas", "2", "-registry-tls-port", "7443"}, flag.ContinueOnError)
	require.NoError(t, err)
	require.Equal(t, devstack.Options{
		Cells: 3, Replicas: 2, Ports: devstack.Ports{GRPC: 7000},
		RegistryPorts: devstack.RegistryPorts{TLS: 7443},
	}, opts)

	opts, err = parseUp([]string{"-cells", "0"}, flag.ContinueOnError)
	require.NoError(t, err)
	require.Equal(t, -1, opts.Cells, "-cells 0 asks for no cells")

	_, err = parseUp([]string{"-cells", "2", "extra"}, flag.ContinueOnError)
	require.ErrorContains(t, err, `unexpected arguments ["extra"]`)
	_, err = parseUp([]string{"-no-such-flag"}, flag.ContinueOnError)
	require.ErrorContains(t, err, "no-such-flag")
}
