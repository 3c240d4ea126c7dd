package containerd

import (
	"context"
	"strings"
	"testing"
	"time"

	"drover.dev/executor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOOMKill(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     uint64
		ok       bool
	}{
		{"cgroup v1 oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3, true},
		{"cgroup v2 memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n", 2, true},
		{"no kill yet", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", 0, true},
		{"old kernel without the counter", "oom_kill_disable 0\nunder_oom 0\n", 0, false},
		{"garbage value", "oom_kill x\n", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := parseOOMKill(strings.NewReader(tc.in))
			assert.Equal(t, tc.want, n)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

// listed returns guid's entry of r.List.
func listed(t *testing.T, r *Runtime, guid string) executor.RuntimeContainer {
	t.Helper()
	ctrs, err := r.List(context.Background())
	require.NoError(t, err)
	for _, c := range ctrs {
		if c.Guid == guid {
			return c
		}
	}
	t.Fatalf("%s not listed", guid)
	return executor.RuntimeContainer{}
}

// startChildHog execs a main process whose child allocates far beyond a 32 MB limit
// while the main process itself stays small and keeps running.
func startChildHog(t *testing.T, r *Runtime, guid, id string) (executor.Process, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	p, err := r.Exec(context.Background(), guid, executor.ProcessSpec{
		ID: id, Path: "/bin/sh",
		Args:   []string{"-c", `sh -c 'dd if=/dev/zero of=/dev/null bs=128M count=1'; echo "child exited $?"; exec sleep 600`},
		Stdout: &out, Stderr: &out,
	})
	require.NoError(t, err)
	return p, &out
}

func TestChildOOMKillIsReportedAndCounted(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	events := r.Events(t.Context())
	spec := busyboxSpec(t)
	spec.Resource.MemoryMB = 32
	create(t, r, spec)
	require.Zero(t, listed(t, r, spec.Guid).OOMKills, "a fresh container has no OOM kill")

	p, out := startChildHog(t, r, spec.Guid, "main")
	waitEvent(t, events, spec.Guid, executor.RuntimeOOM)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "child exited 137") }, time.Minute, 50*time.Millisecond, out.String())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the main process survives its child's OOM kill")
	require.Positive(t, listed(t, r, spec.Guid).OOMKills)
}

func TestOOMKillIsListedByALaterRuntime(t *testing.T) {
	cfg := testConfig(t)
	r1 := newTestRuntime(t, cfg)
	events := r1.Events(t.Context())
	spec := busyboxSpec(t)
	spec.Resource.MemoryMB = 32
	create(t, r1, spec)
	quiet := busyboxSpec(t)
	quiet.Resource.MemoryMB = 32
	create(t, r1, quiet)

	startChildHog(t, r1, spec.Guid, "main")
	waitEvent(t, events, spec.Guid, executor.RuntimeOOM)
	exit, _, _ := run(t, r1, quiet.Guid, "", "dd if=/dev/zero of=/dev/null bs=1M count=4")
	require.Equal(t, executor.ProcessExit{}, exit)
	require.NoError(t, r1.Close())

	// A runtime started later (the rep restarted) finds the kill in the cgroup's counter,
	// and no kill where there was none.
	r2 := newTestRuntime(t, cfg)
	require.Positive(t, listed(t, r2, spec.Guid).OOMKills)
	require.Zero(t, listed(t, r2, quiet.Guid).OOMKills)
}
