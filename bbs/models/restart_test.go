package models_test

import (
	"strconv"
	"testing"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

func TestDefaultRestartPolicy(t *testing.T) {
	require.Equal(t, models.RestartPolicy{
		ImmediateRestarts: 3, MinBackoff: 30 * time.Second, MaxBackoff: 16 * time.Minute,
		MaxRestarts: 200, CrashResetAfter: 5 * time.Minute,
	}, models.DefaultRestartPolicy())
}

// TestRestartSchedule walks the schedule crash by crash. Counts are after the
// increment, as in Diego's code: the 1st and 2nd crash of a fresh instance restart
// at once, the 3rd waits 30s (diego-notes' "restarts up to 3 times" is off by one).
func TestRestartSchedule(t *testing.T) {
	p := models.DefaultRestartPolicy()
	since := time.Unix(1700000000, 0)
	cases := []struct {
		count     int32
		immediate bool
		wait      time.Duration
		never     bool
	}{
		{count: 0, immediate: true},
		{count: 1, immediate: true},
		{count: 2, immediate: true},
		{count: 3, wait: 30 * time.Second},
		{count: 4, wait: time.Minute},
		{count: 5, wait: 2 * time.Minute},
		{count: 6, wait: 4 * time.Minute},
		{count: 7, wait: 8 * time.Minute},
		{count: 8, wait: 16 * time.Minute},
		{count: 9, wait: 16 * time.Minute},
		{count: 100, wait: 16 * time.Minute},
		{count: 199, wait: 16 * time.Minute},
		{count: 200, never: true},
		{count: 201, never: true},
		{count: 1 << 30, never: true},
	}
	for _, tc := range cases {
		t.Run("crash count "+strconv.Itoa(int(tc.count)), func(t *testing.T) {
			require.Equal(t, tc.immediate, p.RestartImmediately(tc.count))
			at, ok := p.RestartAt(tc.count, since)
			if tc.never {
				require.False(t, ok)
				require.False(t, p.ShouldRestart(crashedLRP(tc.count, since), since.Add(24*time.Hour)))
				return
			}
			require.True(t, ok)
			require.Equal(t, since.Add(tc.wait), at)
			a := crashedLRP(tc.count, since)
			require.True(t, p.ShouldRestart(a, at), "due exactly at the backoff")
			require.True(t, p.ShouldRestart(a, at.Add(time.Second)))
			if tc.wait > 0 {
				require.False(t, p.ShouldRestart(a, at.Add(-time.Nanosecond)), "not due before the backoff")
			}
		})
	}
}

func crashedLRP(count int32, since time.Time) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{State: crashed, CrashCount: count, Since: since.UnixNano()}
}

func TestShouldRestartOnlyCrashedRows(t *testing.T) {
	p := models.DefaultRestartPolicy()
	since := time.Unix(1700000000, 0)
	for _, s := range []modelsv1.ActualLRPState{0, unclaimed, claimed, running} {
		require.False(t, p.ShouldRestart(&modelsv1.ActualLRP{State: s, CrashCount: 0, Since: since.UnixNano()}, since.Add(time.Hour)))
	}
	require.False(t, p.ShouldRestart(nil, since))
}

// TestCrashCounting follows one instance through a series of crashes, including
// the reset after 5 minutes of running.
func TestCrashCounting(t *testing.T) {
	p := models.DefaultRestartPolicy()
	start := time.Unix(1700000000, 0)
	cases := []struct {
		name       string
		state      modelsv1.ActualLRPState
		count      int32
		ranFor     time.Duration
		want       int32
		immediate  bool
		restartsIn time.Duration
	}{
		{"first crash while claimed", claimed, 0, time.Minute, 1, true, 0},
		{"second crash after a short run", running, 1, time.Minute, 2, true, 0},
		{"third crash waits 30s", running, 2, 4 * time.Minute, 3, false, 30 * time.Second},
		{"running exactly 5 minutes does not reset", running, 3, 5 * time.Minute, 4, false, time.Minute},
		{"running over 5 minutes resets to 1", running, 7, 5*time.Minute + time.Nanosecond, 1, true, 0},
		{"a long claim does not reset", claimed, 7, time.Hour, 8, false, 16 * time.Minute},
		{"crash number 200 is final", running, 199, time.Minute, 200, false, -1},
		{"count saturates", running, 1<<31 - 1, time.Minute, 1<<31 - 1, false, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &modelsv1.ActualLRP{State: tc.state, CrashCount: tc.count, Since: start.UnixNano()}
			now := start.Add(tc.ranFor)
			got := p.NextCrashCount(a, now)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.immediate, p.RestartImmediately(got))
			at, ok := p.RestartAt(got, now)
			if tc.restartsIn < 0 {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, now.Add(tc.restartsIn), at)
		})
	}
	require.Equal(t, int32(1), p.NextCrashCount(nil, start))
}

func TestRestartPolicyCustomBackoff(t *testing.T) {
	// Diego caps the exponent at log2(ceil(max/min)): with min 30s and max 20m that is
	// 5, so the longest wait is 16m although the cap is 20m.
	p := models.RestartPolicy{ImmediateRestarts: 1, MinBackoff: 30 * time.Second, MaxBackoff: 20 * time.Minute, MaxRestarts: 50}
	since := time.Unix(0, 0)
	for count, want := range map[int32]time.Duration{1: 30 * time.Second, 2: time.Minute, 6: 16 * time.Minute, 40: 16 * time.Minute} {
		at, ok := p.RestartAt(count, since)
		require.True(t, ok)
		require.Equal(t, since.Add(want), at, "count %d", count)
	}
	// A cap below the minimum caps every wait.
	low := models.RestartPolicy{MinBackoff: time.Minute, MaxBackoff: time.Second, MaxRestarts: 10}
	at, ok := low.RestartAt(3, since)
	require.True(t, ok)
	require.Equal(t, since.Add(time.Second), at)
	// A zero policy never waits and never restarts.
	_, ok = models.RestartPolicy{}.RestartAt(0, since)
	require.False(t, ok)
}
