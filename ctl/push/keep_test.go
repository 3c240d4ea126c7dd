package push_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/push"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestRePushWithoutInstancesKeepsTheRunningCountAndAllowSSH(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 3)
	old.AllowSsh = true
	h.files[0].SHA1 = "sha-index-2" // a new version
	h.opts.KeepInstances, h.opts.App.Instances = true, 1

	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	lrp := h.bbs.lrp(res.ProcessGUID)
	require.EqualValues(t, 3, lrp.GetInstances(), "the new version runs as many instances as the old one")
	require.EqualValues(t, 3, res.App.Instances)
	require.True(t, lrp.GetAllowSsh(), "allow_ssh is carried over")
	require.Contains(t, h.out.String(), "Keeping the 3 instances of "+old.GetProcessGuid())
	require.Contains(t, h.out.String(), "3 of 3 instances running")
	require.Nil(t, h.bbs.lrp(old.GetProcessGuid()))

	var annotation push.LRPAnnotation
	require.NoError(t, json.Unmarshal([]byte(lrp.GetAnnotation()), &annotation))
	pushedAt, err := time.Parse(time.RFC3339Nano, annotation.PushedAt)
	require.NoError(t, err, "the push time is stamped")
	require.WithinDuration(t, time.Now(), pushedAt, time.Minute)
	require.Equal(t, "hello", annotation.AppName)
}

func TestRePushOfTheSameVersionWithoutInstancesDoesNotScale(t *testing.T) {
	h := newHarness(t)
	lrp := h.existingLRP(t, 4)
	h.j = &journal{}
	h.bbs.j, h.blobs.j = h.j, h.j
	h.opts.KeepInstances, h.opts.App.Instances = true, 1
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.Equal(t, lrp.GetProcessGuid(), res.ProcessGUID)
	require.Equal(t, -1, h.j.index("Scale"), "the count is kept")
	require.EqualValues(t, 4, h.bbs.lrp(lrp.GetProcessGuid()).GetInstances())
}

func TestRePushWithInstancesSetsThem(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 3)
	old.AllowSsh = false
	h.files[0].SHA1 = "sha-index-2"
	h.opts.App.Instances = 1 // given with -i: KeepInstances is false
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.EqualValues(t, 1, h.bbs.lrp(res.ProcessGUID).GetInstances())
	require.False(t, h.bbs.lrp(res.ProcessGUID).GetAllowSsh())
}

func TestFirstPushWithoutInstancesRunsTheDefault(t *testing.T) {
	h := newHarness(t)
	h.opts.KeepInstances, h.opts.App.Instances = true, 1
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.EqualValues(t, 1, h.bbs.lrp(res.ProcessGUID).GetInstances())
	require.NotContains(t, h.out.String(), "Keeping")
}

func (h *harness) restart(t *testing.T, current *modelsv1.DesiredLRP) (push.RestartResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return push.Restart(ctx, current, 10*time.Second, push.Deps{
		BBS: h.bbs, Logs: h.logs, Routes: h.routes, Out: &h.out, PollInterval: time.Millisecond,
	})
}

func TestRestartReplacesTheLRPWithACopyOnlyOnceItRunsAndIsRouted(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 2)
	h.j = &journal{}
	h.bbs.j, h.routes.j = h.j, h.j
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP {
		if l.GetProcessGuid() != old.GetProcessGuid() && n < 3 {
			return allRunning(l)[:min(n, 1)]
		}
		return allRunning(l)
	}
	res, err := h.restart(t, old)
	require.NoError(t, err, h.out.String())

	appGUID, _, ok := push.SplitProcessGUID(res.ProcessGUID)
	require.True(t, ok, res.ProcessGUID)
	require.Equal(t, push.AppGUID("hello"), appGUID, "the copy is a version of the same app")
	require.NotEqual(t, old.GetProcessGuid(), res.ProcessGUID)
	require.Equal(t, []string{old.GetProcessGuid()}, res.Removed)
	require.Nil(t, h.bbs.lrp(old.GetProcessGuid()))

	copied := h.bbs.lrp(res.ProcessGUID)
	require.EqualValues(t, 2, copied.GetInstances())
	require.Equal(t, old.GetAction().String(), copied.GetAction().String(), "the same definition")
	require.Equal(t, old.GetSetup().String(), copied.GetSetup().String())
	var before, after push.LRPAnnotation
	require.NoError(t, json.Unmarshal([]byte(old.GetAnnotation()), &before))
	require.NoError(t, json.Unmarshal([]byte(copied.GetAnnotation()), &after))
	_, version, _ := push.SplitProcessGUID(res.ProcessGUID)
	require.Equal(t, version, after.Version)
	require.Equal(t, before.PushedAt, after.PushedAt, "a restart is no push")
	require.Equal(t, before.DropletKey, after.DropletKey)

	clear := h.j.index("ClearRoutes " + old.GetProcessGuid())
	require.Less(t, h.j.index("DesireLRP "+res.ProcessGUID), clear)
	require.Less(t, clear, h.j.index("RemoveDesiredLRP "+old.GetProcessGuid()))
	require.Contains(t, h.out.String(), "2 of 2 instances running")
}

func TestRestartCrashKeepsTheOldLRP(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 1)
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, _ int) []*modelsv1.ActualLRP {
		if l.GetProcessGuid() == old.GetProcessGuid() {
			return allRunning(l)
		}
		return []*modelsv1.ActualLRP{{ProcessGuid: l.GetProcessGuid(), State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED, CrashCount: 1, CrashReason: "boom"}}
	}
	res, err := h.restart(t, old)
	require.ErrorContains(t, err, "instance 0 crashed: boom")
	require.Nil(t, h.bbs.lrp(res.ProcessGUID), "the copy is removed")
	require.NotNil(t, h.bbs.lrp(old.GetProcessGuid()), "the old version keeps serving")
	require.NotEmpty(t, h.bbs.lrp(old.GetProcessGuid()).GetRoutes())
}

func TestRestartRefusals(t *testing.T) {
	h := newHarness(t)
	_, err := h.restart(t, &modelsv1.DesiredLRP{ProcessGuid: "my-app", Domain: "apps", Instances: 1})
	require.ErrorContains(t, err, "my-app is not an app version pushed by droverctl")
	stopped := push.ProcessGUID(push.AppGUID("hello"), "0000aaaa")
	_, err = h.restart(t, &modelsv1.DesiredLRP{ProcessGuid: stopped, Domain: "apps", Instances: 0})
	require.ErrorContains(t, err, stopped+" desires 0 instances: nothing to restart")
	require.Equal(t, -1, h.j.index("DesireLRP"))
}
