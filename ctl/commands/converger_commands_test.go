package commands_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// lastPassFixture is a pass reported 30s before testNow.
func lastPassFixture() *bbsv1.ConvergencePass {
	return &bbsv1.ConvergencePass{
		Owner: "conv-0", TakenAt: testNow.Add(-30 * time.Second).UnixNano(),
		SnapshotNanos: int64(12 * time.Millisecond), PlanNanos: int64(1500 * time.Microsecond), ApplyNanos: int64(2 * time.Second),
		DesiredLrps: 5, ActualLrps: 7, Missing: 1, Extra: 2, Orphaned: 3, Crashed: 4, Restarted: 5, StaleUnclaimed: 6,
		SuspectRunning: 7, SuspectClaimed: 8, Retired: 9, KeptStale: 10, KeptPaused: 11, PresentCells: 12, SuspectCells: 13,
		TasksKicked: 14, TasksFailed: 15, TasksDeleted: 16, ActionsApplied: 17, ActionsRefused: 18, ActionsFailed: 19,
		FreshDomains: []string{"cf-apps", "cf-tasks"},
	}
}

func TestConvergerStatus(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.converger = &bbsv1.GetConvergerStatusResponse{LockOwner: "conv-0", LastPass: lastPassFixture()}
	})

	res := run(t, ft.env, "converger", "status")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.IsType(t, &bbsv1.GetConvergerStatusRequest{}, ft.bbs.lastRequest(t))
	require.Equal(t, [][]string{
		{"paused:", "no"},
		{"paused_reason:", "-"},
		{"since:", "-"},
		{"lock_owner:", "conv-0"},
		{"last_pass:", "2026-11-22T11:59:30Z", "(30s", "ago)"},
		{"pass_owner:", "conv-0"},
		{"pass_paused:", "no"},
		{"durations:", "snapshot", "12ms,", "plan", "1.5ms,", "apply", "2s"},
		{"lrps:", "desired", "5,", "actual", "7"},
		{"missing:", "1"},
		{"extra:", "2"},
		{"orphaned:", "3"},
		{"crashed:", "4"},
		{"restarted:", "5"},
		{"stale_unclaimed:", "6"},
		{"suspect:", "running", "7,", "claimed", "8"},
		{"retired:", "9"},
		{"kept:", "stale", "10,", "paused", "11"},
		{"cells:", "present", "12,", "suspect", "13"},
		{"tasks:", "kicked", "14,", "failed", "15,", "deleted", "16"},
		{"actions:", "applied", "17,", "refused", "18,", "failed", "19"},
		{"fresh_domains:", "cf-apps,cf-tasks"},
		{"error:", "-"},
	}, rowFields(res.stdout))

	res = run(t, ft.env, "converger", "status", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Len(t, lines(res.stdout), 1)
	var got struct {
		Paused    bool   `json:"paused"`
		LockOwner string `json:"lock_owner"`
		LastPass  struct {
			TakenAt       string   `json:"taken_at"`
			SnapshotNanos int64    `json:"snapshot_nanos"`
			Missing       int      `json:"missing"`
			ActionsFailed int      `json:"actions_failed"`
			FreshDomains  []string `json:"fresh_domains"`
		} `json:"last_pass"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.False(t, got.Paused)
	require.Equal(t, "conv-0", got.LockOwner)
	require.Equal(t, "2026-11-22T11:59:30Z", got.LastPass.TakenAt)
	require.Equal(t, int64(12*time.Millisecond), got.LastPass.SnapshotNanos)
	require.Equal(t, 1, got.LastPass.Missing)
	require.Equal(t, 19, got.LastPass.ActionsFailed)
	require.Equal(t, []string{"cf-apps", "cf-tasks"}, got.LastPass.FreshDomains)
}

func TestConvergerStatusBeforeAnyPass(t *testing.T) {
	ft := startFakeBBS(t, nil)

	res := run(t, ft.env, "converger", "status")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, [][]string{
		{"paused:", "no"},
		{"paused_reason:", "-"},
		{"since:", "-"},
		{"lock_owner:", "none"},
		{"last_pass:", "no", "pass", "reported", "yet"},
	}, rowFields(res.stdout))

	res = run(t, ft.env, "--json", "converger", "status")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"paused":false,"last_pass":null}`, res.stdout)
}

func TestConvergerPauseResume(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.converger = &bbsv1.GetConvergerStatusResponse{LockOwner: "conv-0"}
	})

	res := run(t, ft.env, "converger", "pause", "--reason", "incident 42")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.SetConvergerPausedRequest{Paused: true, Reason: "incident 42"}, ft.bbs.lastRequest(t)))
	rows := rowFields(res.stdout)
	require.Equal(t, []string{"paused:", "yes"}, rows[0], "the status after the change")
	require.Equal(t, []string{"paused_reason:", "incident", "42"}, rows[1])
	require.Equal(t, []string{"since:", "2026-11-22T12:00:00Z", "(0s", "ago)"}, rows[2])
	require.Equal(t, []string{"lock_owner:", "conv-0"}, rows[3])

	res = run(t, ft.env, "converger", "resume", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.SetConvergerPausedRequest{}, ft.bbs.lastRequest(t)))
	require.JSONEq(t, `{"paused":false,"changed_at":"2026-11-22T12:00:00Z","lock_owner":"conv-0","last_pass":null}`, res.stdout)

	res = run(t, ft.env, "converger", "pause")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.SetConvergerPausedRequest{Paused: true}, ft.bbs.lastRequest(t)), "the reason is optional")
}
