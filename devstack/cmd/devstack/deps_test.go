package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
)

// The launcher behind `make up` links no test code: not package testing (nor its
// subpackages), not testify, not the store's test helpers (which create databases), and
// none of drover's test packages (lib/testenv, lib/proctest, devstacktest, natstest).
func TestLinksNoTestCode(t *testing.T) {
	require.Empty(t, proctest.Forbidden(proctest.Deps(t, "."),
		"testing", "github.com/stretchr/testify", "drover.dev/bbs/store/storetest",
		"drover.dev/lib/testenv", "drover.dev/lib/proctest",
		"drover.dev/devstack/devstacktest", "drover.dev/devstack/natstest",
	))
}
