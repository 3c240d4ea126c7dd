package steps_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor/steps"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestScheduleNext(t *testing.T) {
	s := steps.Schedule{StartTimeout: 10 * time.Second, UnhealthyInterval: 2 * time.Second, HealthyInterval: 30 * time.Second}
	unbounded := steps.Schedule{UnhealthyInterval: 2 * time.Second, HealthyInterval: 30 * time.Second}
	cases := []struct {
		name   string
		s      steps.Schedule
		phase  steps.Phase
		passed bool
		since  time.Duration
		want   steps.Decision
	}{
		{"startup pass", s, steps.Startup, true, time.Second, steps.Decision{Outcome: steps.BecameHealthy, Wait: 30 * time.Second}},
		{"startup fail retries", s, steps.Startup, false, time.Second, steps.Decision{Outcome: steps.Retry, Wait: 2 * time.Second}},
		{"startup retry capped by timeout", s, steps.Startup, false, 9500 * time.Millisecond, steps.Decision{Outcome: steps.Retry, Wait: 500 * time.Millisecond}},
		{"startup timeout reached", s, steps.Startup, false, 10 * time.Second, steps.Decision{Outcome: steps.NeverHealthy}},
		{"startup pass at timeout still healthy", s, steps.Startup, true, 11 * time.Second, steps.Decision{Outcome: steps.BecameHealthy, Wait: 30 * time.Second}},
		{"no start timeout retries forever", unbounded, steps.Startup, false, time.Hour, steps.Decision{Outcome: steps.Retry, Wait: 2 * time.Second}},
		{"liveness pass", s, steps.Liveness, true, 0, steps.Decision{Outcome: steps.StillHealthy, Wait: 30 * time.Second}},
		{"liveness fail", s, steps.Liveness, false, 0, steps.Decision{Outcome: steps.BecameUnhealthy}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.Next(tc.phase, tc.passed, tc.since))
		})
	}
}

func TestScheduleAttemptDeadline(t *testing.T) {
	s := steps.Schedule{StartTimeout: 10 * time.Second}
	assert.Equal(t, 7*time.Second, s.AttemptDeadline(3*time.Second))
	assert.Equal(t, time.Nanosecond, s.AttemptDeadline(20*time.Second))
	assert.Equal(t, time.Duration(0), steps.Schedule{}.AttemptDeadline(time.Hour))
}

// scripted passes or fails per call from a list; after the list it repeats the last.
func scripted(results ...error) (steps.Checker, *atomic.Int32) {
	var n atomic.Int32
	return steps.CheckerFunc(func(ctx context.Context) error {
		i := int(n.Add(1)) - 1
		if i >= len(results) {
			i = len(results) - 1
		}
		return results[i]
	}), &n
}

func fastSchedule(start time.Duration) steps.Schedule {
	return steps.Schedule{StartTimeout: start, UnhealthyInterval: 5 * time.Millisecond, HealthyInterval: 10 * time.Millisecond}
}

func TestHealthNeverHealthy(t *testing.T) {
	c, _ := scripted(errors.New("connection refused"))
	h := &steps.Health{Schedule: fastSchedule(60 * time.Millisecond), Startup: c}
	healthy := false
	err := h.Run(context.Background(), func() { healthy = true })
	require.Error(t, err)
	assert.False(t, healthy)
	assert.Equal(t, "Instance never healthy after 60ms: connection refused", err.Error())
}

func TestHealthBecomesUnhealthy(t *testing.T) {
	startup, _ := scripted(errors.New("not yet"), nil)
	live, calls := scripted(nil, nil, errors.New("gone"))
	h := &steps.Health{Schedule: fastSchedule(time.Second), Startup: startup, Liveness: []steps.Probe{{Checker: live}}}
	healthy := make(chan struct{})
	err := h.Run(context.Background(), func() { close(healthy) })
	<-healthy
	require.Error(t, err)
	assert.Equal(t, "Instance became unhealthy: gone", err.Error())
	assert.Equal(t, int32(3), calls.Load())
}

func TestHealthCancelled(t *testing.T) {
	c, _ := scripted(nil)
	h := &steps.Health{Schedule: fastSchedule(0), Startup: c, Liveness: []steps.Probe{{Checker: c}}}
	ctx, cancel := context.WithCancel(context.Background())
	healthy := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx, func() { close(healthy) }) }()
	<-healthy
	cancel()
	assert.ErrorIs(t, waitErr(t, done), steps.ErrCancelled)
}

func TestMonitorCheckerFreshIDs(t *testing.T) {
	e := newEnv(t)
	c, err := steps.MonitorChecker(run("sh", "-c", "exit 1"), *e.deps, "monitor-0")
	require.NoError(t, err)
	err = c.Check(context.Background())
	assert.Equal(t, "APP: Exited with status 1", err.Error())
	require.Error(t, c.Check(context.Background()))
	for _, id := range []string{"monitor-0-1", "monitor-0-2"} {
		_, ok := e.rt.ProcessSpec(e.guid, id)
		assert.True(t, ok, id)
	}
	assert.Empty(t, e.lines(), "monitor output and exit status are not logged")
}

func TestCheckDefinitionHealth(t *testing.T) {
	e := newEnv(t)
	def := &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{
		{TcpCheck: &modelsv1.TCPCheck{Port: 8080}},
		{HttpCheck: &modelsv1.HTTPCheck{Port: 8081, Path: "/health", IntervalMs: 7}},
	}}
	startup, probes, err := steps.CheckDefinitionHealth(e.rt, e.guid, def)
	require.NoError(t, err)
	require.Len(t, probes, 2)
	assert.Equal(t, 7*time.Millisecond, probes[1].Interval)
	require.NoError(t, startup.Check(context.Background()))

	e.rt.FailChecks(e.guid, true)
	err = startup.Check(context.Background())
	assert.Equal(t, "health check never passed: tcp check on port 8080 failed: connection refused (simulated); http check on port 8081 path /health failed: connection refused (simulated)", err.Error())
	err = probes[0].Checker.Check(context.Background())
	assert.Equal(t, "health check failed: tcp check on port 8080 failed: connection refused (simulated)", err.Error())

	_, _, err = steps.CheckDefinitionHealth(e.rt, e.guid, &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{}}})
	assert.ErrorContains(t, err, "exactly one of tcp_check and http_check")
}
