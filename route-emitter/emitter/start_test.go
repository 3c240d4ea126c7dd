package emitter

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/route-emitter/routingtable"
)

func TestIntervalsOfClampsToARange(t *testing.T) {
	for _, tc := range []struct {
		name            string
		register, prune int
		want            routerIntervals
	}{
		{name: "gorouter's defaults", register: 20, prune: 120, want: routerIntervals{Register: 20 * time.Second, Prune: 120 * time.Second}},
		{name: "the bounds", register: 1, prune: 3600, want: routerIntervals{Register: time.Second, Prune: time.Hour}},
		{name: "none given", want: routerIntervals{}},
		{name: "negative is none", register: -5, prune: -1, want: routerIntervals{Clamped: true}},
		{name: "above an hour", register: 3601, prune: 86400, want: routerIntervals{Register: time.Hour, Prune: time.Hour, Clamped: true}},
		// 2^33 s overflows int64 nanoseconds: today a negative duration.
		{name: "overflowing", register: 1 << 33, prune: 1 << 40, want: routerIntervals{Register: time.Hour, Prune: time.Hour, Clamped: true}},
		{name: "the largest int", register: math.MaxInt, prune: math.MaxInt, want: routerIntervals{Register: time.Hour, Prune: time.Hour, Clamped: true}},
		{name: "the smallest int", register: math.MinInt, prune: 0, want: routerIntervals{Clamped: true}},
		{name: "only prune out of range", register: 5, prune: math.MaxInt, want: routerIntervals{Register: 5 * time.Second, Prune: time.Hour, Clamped: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := intervalsOf(StartMessage{MinimumRegisterIntervalInSeconds: tc.register, PruneThresholdInSeconds: tc.prune})
			assert.Equal(t, tc.want, got)
			assert.GreaterOrEqual(t, got.Register, time.Duration(0))
			assert.LessOrEqual(t, got.Register, MaxRouterInterval)
		})
	}
}

// TestHugeRouterStartIsClamped: a router.start whose interval overflows a duration
// sets the largest interval, not a negative one.
func TestHugeRouterStartIsClamped(t *testing.T) {
	s := startNATS(t, nil)
	router := record(t, s, SubjectRegister)
	e := New(testOptions(s))
	e.SetSource(func() []routingtable.RegistryMessage { return []routingtable.RegistryMessage{msg("a.example.com")} })
	run(t, e)
	require.Eventually(t, e.Connected, waitFor, pollEvery)
	data, err := json.Marshal(map[string]any{"id": "huge", "minimumRegisterIntervalInSeconds": int64(math.MaxInt64), "pruneThresholdInSeconds": int64(math.MaxInt64)})
	require.NoError(t, err)
	require.NoError(t, router.conn.Publish(SubjectStart, data))
	require.Eventually(t, func() bool { return e.RegisterIntervalSeconds() == 3600 }, waitFor, pollEvery,
		"an hour (today's code computes a negative duration): %d", e.RegisterIntervalSeconds())

	// A later, sane start is followed again.
	require.NoError(t, router.conn.Publish(SubjectStart, []byte(`{"id":"sane","minimumRegisterIntervalInSeconds":1}`)))
	require.Eventually(t, func() bool { return e.RegisterIntervalSeconds() == 1 && router.count(SubjectRegister) >= 1 }, waitFor, pollEvery)
}
