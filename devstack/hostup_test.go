package devstack

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/testenv"
)

// TestUpHostsAndDown brings a multi-host dev stack up as `make up HOSTS=2` does (no
// bookworm stack), requires every service healthy, on its host, with no 127.0.0.1 in
// any written configuration, then takes it down as `make down` does (from its state on
// disk) and requires the test network gone.
func TestUpHostsAndDown(t *testing.T) {
	testenv.RequireRoot(t, "a multi-host stack creates network namespaces")
	if _, err := os.Stat(RegistryBinary); err != nil {
		testenv.Missing(t, "docker-registry", "run scripts/install-deps.sh")
	}
	root, err := FindRoot()
	require.NoError(t, err)
	home, err := os.MkdirTemp("", "drover-uphosts-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(home, 0o755)) // the postgres user reaches its cluster
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var network *HostNetwork
	t.Cleanup(func() {
		if err := DownHome(context.Background(), root, home); err != nil {
			t.Errorf("down: %v", err)
		}
		if network != nil {
			require.Empty(t, network.Leftovers(context.Background()), "down removes the test network")
		}
	})
	s, err := Up(ctx, Options{Root: root, Home: home, Hosts: 2, NoBookworm: true, Logf: t.Logf})
	require.NoError(t, err)
	network = s.Hosts
	require.NotNil(t, network)
	require.Len(t, s.Reps, 2)
	for _, st := range s.Status(ctx) {
		require.NoError(t, st.Unhealthy, "%s (%s)", st.Name, st.Addresses)
		require.NotContains(t, st.Addresses, "127.0.0.1", st.Name)
	}
	left, err := ConfigLoopbacks(s)
	require.NoError(t, err)
	require.Empty(t, left)
	for _, svc := range s.Services() {
		require.NotEmpty(t, svc.Netns, svc.Name)
	}

	again, err := Up(ctx, Options{Root: root, Home: home, Hosts: 2, NoBookworm: true, Logf: t.Logf})
	require.NoError(t, err)
	require.Equal(t, network.ID, again.Hosts.ID, "an up and healthy multi-host stack is kept")

	require.NoError(t, DownHome(ctx, root, home))
	require.Empty(t, network.Leftovers(ctx), "down removes the test network")
	_, err = Load(home)
	require.ErrorIs(t, err, os.ErrNotExist)
}
