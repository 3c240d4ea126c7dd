package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestRecordExec: a cell records an exec of its own RUNNING instance as an
// exec_started event; another cell's instance, an instance the index does not hold, a
// CLAIMED one and a request without args are refused and record nothing.
func TestRecordExec(t *testing.T) {
	h := newHarness(t)
	as := serveGuarded(t, h)
	cell1, cell2 := as("cell:cell-1"), as("cell:cell-2")
	w := h.world("x")
	after := h.latestSequence()
	sub := h.subscribe(&after, "")

	req := func(guid string, index int32, ik *modelsv1.ActualLRPInstanceKey, args ...string) *bbsv1.RecordExecRequest {
		return &bbsv1.RecordExecRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: index, Domain: "ignored"},
			ActualLrpInstanceKey: ik, User: "drover-client", Args: args, Tty: true}
	}
	_, err := cell2.RecordExec(h.ctx(), req(w.lrp(), 0, w.ownKey(), "sh"))
	requireCode(t, err, codes.PermissionDenied)
	_, err = cell1.RecordExec(h.ctx(), req(w.far(), 1, w.farKey(1), "sh"))
	requireCode(t, err, codes.PermissionDenied)
	_, err = cell1.RecordExec(h.ctx(), req(w.far(), 1, instanceKey(w.far(), 1, "cell-1"), "sh"))
	requireCode(t, err, codes.NotFound)
	_, err = h.client.RecordExec(h.ctx(), req(w.far(), 0, w.farKey(0), "sh"))
	requireCode(t, err, codes.FailedPrecondition)
	_, err = cell1.RecordExec(h.ctx(), req(w.lrp(), 0, w.ownKey()))
	requireCode(t, err, codes.InvalidArgument)
	require.ErrorContains(t, err, "args")

	_, err = cell1.RecordExec(h.ctx(), req(w.lrp(), 0, w.ownKey(), "sh", "-c", "ps"))
	require.NoError(t, err)
	e := sub.next(t)
	require.Equal(t, models.EventTypeExecStarted, models.EventType(e), "the refused calls emitted nothing")
	x := e.GetExecStarted()
	require.Equal(t, w.lrp(), x.GetActualLrpKey().GetProcessGuid())
	require.Equal(t, testDomain, x.GetActualLrpKey().GetDomain(), "the domain is the row's")
	require.Equal(t, w.ownKey().GetInstanceGuid(), x.GetActualLrpInstanceKey().GetInstanceGuid())
	require.Equal(t, "cell-1", x.GetActualLrpInstanceKey().GetCellId())
	require.Equal(t, "drover-client", x.GetUser())
	require.Equal(t, []string{"sh", "-c", "ps"}, x.GetArgs())
	require.True(t, x.GetTty())
}

// TestAllowSSHIsOffByDefaultAndUpdatable: allow_ssh is stored with the LRP, false
// unless desired, and an update sets it with a desired_lrp_changed event.
func TestAllowSSHIsOffByDefaultAndUpdatable(t *testing.T) {
	h := newHarness(t)
	h.desire("ssh-off", 1)
	lrp := desiredLRP("ssh-on", 1)
	lrp.AllowSsh = true
	_, err := h.client.DesireLRP(h.ctx(), &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
	require.NoError(t, err)
	get := func(guid string) *modelsv1.DesiredLRP {
		resp, err := h.client.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: guid})
		require.NoError(t, err)
		return resp.GetDesiredLrp()
	}
	require.False(t, get("ssh-off").GetAllowSsh())
	require.True(t, get("ssh-on").GetAllowSsh())

	after := h.latestSequence()
	sub := h.subscribe(&after, "")
	on, off := true, false
	_, err = h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "ssh-off", Update: &modelsv1.DesiredLRPUpdate{AllowSsh: &on}})
	require.NoError(t, err)
	require.True(t, get("ssh-off").GetAllowSsh())
	e := sub.next(t)
	require.False(t, e.GetDesiredLrpChanged().GetBefore().GetAllowSsh())
	require.True(t, e.GetDesiredLrpChanged().GetAfter().GetAllowSsh())
	require.EqualValues(t, 1, get("ssh-off").GetInstances(), "nothing else changed")

	_, err = h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "ssh-on", Update: &modelsv1.DesiredLRPUpdate{AllowSsh: &off}})
	require.NoError(t, err)
	require.False(t, get("ssh-on").GetAllowSsh())
	annotation := "x"
	_, err = h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "ssh-off", Update: &modelsv1.DesiredLRPUpdate{Annotation: &annotation}})
	require.NoError(t, err)
	require.True(t, get("ssh-off").GetAllowSsh(), "an update without allow_ssh keeps it")
}
