package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/executor/sim"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestCheckRootFS(t *testing.T) {
	rt := sim.New(sim.Config{PreloadedRootFSes: []string{"busybox"}, ArbitrarySchemes: []string{"docker"}})
	for rootfs, ok := range map[string]bool{"preloaded:busybox": true, "preloaded:nope": false, "docker:///alpine": true, "oci:///x": false, "plain": false} {
		err := rt.CheckRootFS(rootfs)
		if ok {
			assert.NoError(t, err, rootfs)
		} else {
			assert.ErrorIs(t, err, executor.ErrUnsupportedRootFS, rootfs)
		}
	}
	assert.Equal(t, "preloaded", rt.RootFSProviders()[0].GetName())
	assert.Equal(t, "docker", rt.RootFSProviders()[1].GetName())
}

func TestCreatePortsListDestroy(t *testing.T) {
	rt := sim.New(sim.Config{ExternalIP: "1.2.3.4"})
	ctx := context.Background()
	net, err := rt.Create(ctx, executor.ContainerSpec{Guid: "a", Ports: []uint32{8080, 8080, 2222}, State: []byte("s")})
	require.NoError(t, err)
	assert.Equal(t, "1.2.3.4", net.ExternalIP)
	assert.Equal(t, "10.255.0.1", net.InternalIP)
	assert.Equal(t, []executor.PortMapping{{ContainerPort: 8080, HostPort: sim.FirstHostPort}, {ContainerPort: 2222, HostPort: sim.FirstHostPort + 1}}, net.Ports)
	_, err = rt.Create(ctx, executor.ContainerSpec{Guid: "a"})
	assert.Error(t, err, "duplicate guid")
	list, err := rt.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, []byte("s"), list[0].State)
	assert.True(t, list[0].Alive)
	require.NoError(t, rt.Destroy(ctx, "a"))
	require.NoError(t, rt.Destroy(ctx, "a"))
	assert.Equal(t, 0, rt.Count())
}

func TestCreateLatencyAndFailures(t *testing.T) {
	rt := sim.New(sim.Config{StartLatency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := rt.Create(ctx, executor.ContainerSpec{Guid: "a"})
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	failing := sim.New(sim.Config{FailureRate: 1})
	_, err = failing.Create(context.Background(), executor.ContainerSpec{Guid: "a"})
	assert.EqualError(t, err, "simulated failure")
}

func TestProcesses(t *testing.T) {
	cases := []struct {
		name  string
		spec  executor.ProcessSpec
		exits bool
		code  int
	}{
		{"false", executor.ProcessSpec{Path: "false"}, true, 1},
		{"true", executor.ProcessSpec{Path: "true"}, true, 0},
		{"exit in one arg", executor.ProcessSpec{Path: "sh", Args: []string{"-c", "exit 7"}}, true, 7},
		{"exit in two args", executor.ProcessSpec{Path: "x", Args: []string{"exit", "3"}}, true, 3},
		{"long running", executor.ProcessSpec{Path: "sleep", Args: []string{"100"}}, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := sim.New(sim.Config{})
			ctx := context.Background()
			_, err := rt.Create(ctx, executor.ContainerSpec{Guid: "g"})
			require.NoError(t, err)
			tc.spec.ID = "p"
			p, err := rt.Exec(ctx, "g", tc.spec)
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			exit, err := p.Wait(wctx)
			if tc.exits {
				require.NoError(t, err)
				assert.Equal(t, tc.code, exit.Code)
				return
			}
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			again, err := rt.Reattach(ctx, "g", "p", nil, nil)
			require.NoError(t, err)
			require.NoError(t, again.Signal(ctx, 15))
			exit, err = p.Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, 143, exit.Code)
			_, err = rt.Reattach(ctx, "g", "p", nil, nil)
			assert.Error(t, err, "an exited process cannot be reattached")
		})
	}
}

func TestChecksKillAndEvents(t *testing.T) {
	rt := sim.New(sim.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := rt.Events(ctx)
	_, err := rt.Create(ctx, executor.ContainerSpec{Guid: "g"})
	require.NoError(t, err)
	check := &modelsv1.Check{TcpCheck: &modelsv1.TCPCheck{Port: 8080}}
	require.NoError(t, rt.Check(ctx, "g", check))
	rt.FailChecks("g", true)
	assert.Error(t, rt.Check(ctx, "g", check))
	p, err := rt.Exec(ctx, "g", executor.ProcessSpec{ID: "p", Path: "sleep"})
	require.NoError(t, err)
	rt.Kill("g")
	exit, err := p.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 137, exit.Code)
	ev := <-events
	assert.Equal(t, executor.RuntimeEvent{Guid: "g", Kind: executor.RuntimeVanished, Reason: "container vanished (simulated)"}, ev)
	assert.Equal(t, 0, rt.Count())
}
