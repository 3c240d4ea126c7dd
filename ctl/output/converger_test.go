package output_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/output"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestPhaseDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{1234 * time.Nanosecond, "1µs"},
		{999_999 * time.Nanosecond, "1ms"},
		{12_345_678 * time.Nanosecond, "12.3ms"},
		{1_234_567_890 * time.Nanosecond, "1.23s"},
		{90 * time.Second, "1m30s"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, output.PhaseDuration(int64(tt.in)), "%d ns", tt.in)
	}
}

func TestCountInstancesAndProgress(t *testing.T) {
	running, claimed := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	evacuating := modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
	tests := []struct {
		name   string
		lrps   []*modelsv1.ActualLRP
		counts []output.InstanceCount
		line   string
	}{
		{
			name: "none",
			line: "[1m5s] cell cell-1: no instances left, waiting for the rep to exit",
		},
		{
			name:   "one",
			lrps:   []*modelsv1.ActualLRP{{State: running, Presence: evacuating}},
			counts: []output.InstanceCount{{Presence: "EVACUATING", State: "RUNNING", Count: 1}},
			line:   "[1m5s] cell cell-1: 1 instance: 1 RUNNING (EVACUATING)",
		},
		{
			name: "ordinary first, then by state; unspecified presence is ordinary",
			lrps: []*modelsv1.ActualLRP{
				{State: running, Presence: evacuating}, {State: running}, {State: claimed},
				{State: running, Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY},
			},
			counts: []output.InstanceCount{
				{Presence: "ORDINARY", State: "CLAIMED", Count: 1},
				{Presence: "ORDINARY", State: "RUNNING", Count: 2},
				{Presence: "EVACUATING", State: "RUNNING", Count: 1},
			},
			line: "[1m5s] cell cell-1: 4 instances: 1 CLAIMED, 2 RUNNING, 1 RUNNING (EVACUATING)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := output.NewEvacuationProgress("cell-1", 65*time.Second, tt.lrps)
			require.Len(t, p.Instances, len(tt.counts))
			for i, want := range tt.counts {
				got := p.Instances[i]
				require.Equal(t, []any{want.Presence, want.State, want.Count}, []any{got.Presence, got.State, got.Count})
			}
			require.Equal(t, tt.line, p.String())
			later := output.NewEvacuationProgress("cell-1", time.Hour, tt.lrps)
			require.Equal(t, p.Summary(), later.Summary(), "the summary ignores the time")
		})
	}
	done := output.NewEvacuationProgress("cell-1", time.Second, nil)
	done.Done = true
	require.Equal(t, "[1s] cell cell-1: gone, evacuation done", done.String())
}
