package commands_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	"drover.dev/ctl/commands"
	"drover.dev/ctl/push"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// Process guids of the app fixtures: web has one version, api two (a push replacing
// the older one).
var (
	webV1 = push.ProcessGUID(push.AppGUID("web"), "0000aaaa")
	apiV1 = push.ProcessGUID(push.AppGUID("api"), "0000bbbb")
	apiV2 = push.ProcessGUID(push.AppGUID("api"), "0000cccc")
)

func appVersionLRP(name, guid string, instances int32, pushedAgo time.Duration) *modelsv1.DesiredLRP {
	_, version, _ := push.SplitProcessGUID(guid)
	annotation, _ := json.Marshal(push.LRPAnnotation{
		AppName: name, AppGUID: push.AppGUID(name), Version: version,
		PushedAt: testNow.Add(-pushedAgo).Format(time.RFC3339Nano),
	})
	return &modelsv1.DesiredLRP{
		ProcessGuid: guid, Domain: push.AppsDomain, Instances: instances, Rootfs: "preloaded:busybox",
		MemoryMb: 64, DiskMb: 256, Annotation: string(annotation), Routes: push.Routes(name + ".example.com"),
	}
}

func crashEvent(seq uint64, guid string, index int32, reason string) *modelsv1.Event {
	return &modelsv1.Event{Sequence: seq, CreatedAt: testNow.Add(-time.Minute).UnixNano(), Payload: &modelsv1.Event_ActualLrpCrashed{
		ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: index}, CrashCount: 3, CrashReason: reason,
		},
	}}
}

// historyEvents are the BBS's retained events 1 to 10: the newest is 10.
func historyEvents() []*modelsv1.Event {
	var out []*modelsv1.Event
	for seq := uint64(1); seq <= 10; seq++ {
		switch seq {
		case 5:
			out = append(out, crashEvent(seq, webV1, 1, "APP/PROC/WEB: Exited with status 1"))
		case 6:
			out = append(out, crashEvent(seq, apiV2, 0, "not web"))
		case 8:
			out = append(out, &modelsv1.Event{Sequence: seq, Payload: &modelsv1.Event_DesiredLrpChanged{DesiredLrpChanged: &modelsv1.DesiredLRPChangedEvent{
				Before: &modelsv1.DesiredLRP{ProcessGuid: webV1, Instances: 1}, After: &modelsv1.DesiredLRP{ProcessGuid: webV1, Instances: 2},
			}}})
		default:
			out = append(out, &modelsv1.Event{Sequence: seq, Payload: &modelsv1.Event_TaskRemoved{TaskRemoved: &modelsv1.TaskRemovedEvent{Task: &modelsv1.Task{TaskGuid: "t" + strconv.Itoa(int(seq))}}}})
		}
	}
	return out
}

// serveHistory answers a subscription without a cursor with the newest sequence in
// its headers, and one with a cursor with the later events; both then wait.
func serveHistory(events []*modelsv1.Event) func(*bbsv1.SubscribeRequest, grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
	return func(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
		newest := events[len(events)-1].GetSequence()
		if req.AfterSequence == nil {
			if err := stream.SendHeader(metadata.Pairs(client.AfterSequenceHeader, strconv.FormatUint(newest, 10))); err != nil {
				return err
			}
		}
		for _, e := range events {
			if req.AfterSequence != nil && e.GetSequence() > req.GetAfterSequence() {
				if err := stream.Send(&bbsv1.SubscribeResponse{Event: e}); err != nil {
					return err
				}
			}
		}
		<-stream.Context().Done()
		return nil
	}
}

// subscribeFunc serves the fake BBS's event subscriptions.
type subscribeFunc = func(*bbsv1.SubscribeRequest, grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error

// appFixture serves two apps, an LRP of another domain, two reps and the event
// history of historyEvents; events, when given, serves the subscriptions instead.
func appFixture(t *testing.T, events ...subscribeFunc) (*fakeTarget, *fakeRep, *fakeRep) {
	t.Helper()
	var rep1, rep2 *fakeRep
	ft := startFakeBBS(t, func(f *fakeBBS) {
		rep1 = startFakeRep(t, f.pki, &fakeRep{
			lines: []*repv1.LogLine{{ContainerGuid: "w0", ProcessGuid: webV1, Index: 0, Source: "APP", Text: "web says hi", Timestamp: logTime(0)}},
			previous: []*repv1.LogLine{
				{ContainerGuid: "dead", ProcessGuid: webV1, Index: 1, Source: "APP", Text: "panic: out of luck", Timestamp: logTime(2 * time.Second)},
			},
		})
		rep2 = startFakeRep(t, f.pki, &fakeRep{previous: []*repv1.LogLine{
			{ContainerGuid: "dead2", ProcessGuid: webV1, Index: 0, Source: "APP", Text: "an earlier crash elsewhere", Timestamp: logTime(time.Second)},
		}})
		f.cells = []*modelsv1.CellPresence{{CellId: "cell-1", RepAddress: rep1.addr}, {CellId: "cell-2", RepAddress: rep2.addr}}
		f.desired = []*modelsv1.DesiredLRP{
			appVersionLRP("web", webV1, 2, time.Hour),
			appVersionLRP("api", apiV1, 1, 2*time.Hour),
			appVersionLRP("api", apiV2, 1, 10*time.Minute),
			{ProcessGuid: "legacy", Domain: "other", Instances: 1},
		}
		f.actual = []*modelsv1.ActualLRP{
			{ProcessGuid: webV1, Index: 0, Domain: push.AppsDomain, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, CellId: "cell-1",
				NetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1"}, Since: testNow.Add(-time.Minute).UnixNano()},
			{ProcessGuid: webV1, Index: 1, Domain: push.AppsDomain, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED, CrashCount: 3,
				CrashReason: "APP/PROC/WEB: Exited with status 1"},
			{ProcessGuid: apiV1, Index: 0, Domain: push.AppsDomain, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, CellId: "cell-2"},
			{ProcessGuid: apiV2, Index: 0, Domain: push.AppsDomain, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, CellId: "cell-2"},
		}
		f.subscribe = serveHistory(historyEvents())
		if len(events) > 0 {
			f.subscribe = events[0]
		}
	})
	return ft, rep1, rep2
}

func TestApps(t *testing.T) {
	ft, _, _ := appFixture(t)
	res := run(t, ft.env, "apps")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, [][]string{
		{"NAME", "VERSION", "INSTANCES", "ROUTES", "LAST_PUSH"},
		{"api", "0000cccc,0000bbbb", "1/1", "api.example.com", "10m"},
		{"web", "0000aaaa", "1/2", "web.example.com", "1h"},
	}, rowFields(res.stdout), "one row per app; the LRP outside domain apps is none")
	require.True(t, proto.Equal(&bbsv1.ListActualLRPsRequest{Domain: push.AppsDomain}, ft.bbs.lastRequest(t)))

	res = run(t, ft.env, "apps", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	var web map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines(res.stdout)[1]), &web))
	require.Equal(t, "web", web["name"])
	require.Equal(t, []any{webV1}, web["process_guids"])
	require.EqualValues(t, 1, web["running_instances"])
	require.EqualValues(t, 2, web["instances"])
	require.Equal(t, []any{"web.example.com"}, web["routes"])
	require.Equal(t, "2026-11-22T11:00:00Z", web["last_push"])
}

func TestApp(t *testing.T) {
	ft, _, _ := appFixture(t)
	for _, arg := range []string{"web", webV1} {
		res := run(t, ft.env, "app", arg)
		require.Equal(t, commands.ExitOK, res.code, res.stderr)
		require.Empty(t, res.stderr)
		details, rest, found := strings.Cut(res.stdout, "\n\n")
		require.True(t, found, res.stdout)
		require.Contains(t, lines(details), "name:          web")
		require.Contains(t, lines(details), "instances:     1/2 running")
		require.Contains(t, lines(details), "routes:        web.example.com")
		require.Contains(t, lines(details), "last_push:     2026-11-22T11:00:00Z (1h ago)")
		instances, events, found := strings.Cut(rest, "\n\nRecent events:\n")
		require.True(t, found, res.stdout)
		require.Equal(t, [][]string{
			{"VERSION", "INDEX", "STATE", "CELL", "ADDRESS", "SINCE", "CRASHES", "REASON"},
			{"0000aaaa", "0", "RUNNING", "cell-1", "10.0.0.1", "1m", "0", "-"},
			{"0000aaaa", "1", "CRASHED", "-", "-", "-", "3", "APP/PROC/WEB:", "Exited", "with", "status", "1"},
		}, rowFields(instances))
		eventLines := lines(events)
		require.Len(t, eventLines, 2, "only the app's events: %s", events)
		require.Contains(t, eventLines[0], "actual_lrp_crashed")
		require.Contains(t, eventLines[0], `reason="APP/PROC/WEB: Exited with status 1"`)
		require.Contains(t, eventLines[1], "instances=1->2")
	}

	res := run(t, ft.env, "app", "web", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Len(t, lines(res.stdout), 5, "the app, 2 instances, 2 events:\n%s", res.stdout)
	var crashed map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines(res.stdout)[2]), &crashed))
	require.Equal(t, "APP/PROC/WEB: Exited with status 1", crashed["crash_reason"])

	res = run(t, ft.env, "app", "nobody")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "ResourceNotFound: no app nobody in domain apps")
}

func TestAppWithoutEventHistoryStillShowsTheApp(t *testing.T) {
	never := func(_ *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
		<-stream.Context().Done() // never names its start: the read times out
		return nil
	}
	ft, _, _ := appFixture(t, never)
	res := run(t, ft.env, "app", "web", "--timeout", "1s")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "CRASHED")
	require.Contains(t, res.stderr, "warning: recent events:")
}

func TestScaleDeleteByAppName(t *testing.T) {
	ft, _, _ := appFixture(t)
	res := run(t, ft.env, "scale", "web", "3")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "scaled app web ("+webV1+") to 3 instances\n", res.stdout)
	require.True(t, proto.Equal(&bbsv1.UpdateDesiredLRPRequest{ProcessGuid: webV1, Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(3)}},
		ft.bbs.lastRequest(t)))

	res = run(t, ft.env, "scale", webV1, "4")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "scaled "+webV1+" to 4 instances\n", res.stdout, "a process guid still works")

	before := len(ft.bbs.recorded())
	res = run(t, ft.env, "scale", "api", "2")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "InvalidRequest: app api has 2 versions ("+apiV2+", "+apiV1+")")
	for _, req := range ft.bbs.recorded()[before:] {
		require.IsType(t, &bbsv1.ListDesiredLRPsRequest{}, req, "nothing is scaled")
	}

	res = run(t, ft.env, "delete", "api")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "removed desired LRP "+apiV2+"\nremoved desired LRP "+apiV1+"\n", res.stdout, "every version goes")
	reqs := ft.bbs.recorded()
	require.True(t, proto.Equal(&bbsv1.RemoveDesiredLRPRequest{ProcessGuid: apiV2}, reqs[len(reqs)-2]))
	require.True(t, proto.Equal(&bbsv1.RemoveDesiredLRPRequest{ProcessGuid: apiV1}, reqs[len(reqs)-1]))

	res = run(t, ft.env, "delete", "legacy")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "legacy"}, ft.bbs.lastRequest(t)), "another domain's process guid")
}

func TestRestartRefusals(t *testing.T) {
	ft, _, _ := appFixture(t)
	res := run(t, ft.env, "restart", "api")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "app api has 2 versions")

	res = run(t, ft.env, "restart", "legacy")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "ResourceNotFound: no app legacy in domain apps")

	res = run(t, ft.env, "restart")
	require.Equal(t, commands.ExitUsage, res.code)
	require.Contains(t, res.stderr, "restart takes 1 argument: APP")
	for _, req := range ft.bbs.recorded() {
		_, desire := req.(*bbsv1.DesireLRPRequest)
		require.False(t, desire, "nothing is desired")
	}
}

func TestLogsByAppNameAndPrevious(t *testing.T) {
	ft, rep1, rep2 := appFixture(t)
	res := run(t, ft.env, "logs", "web")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-11-22T12:00:00.000Z [APP/0] web says hi\n", res.stdout)
	require.Equal(t, webV1, rep1.recorded()[0].(*repv1.StreamLogsRequest).GetProcessGuid())

	res = run(t, ft.env, "logs", "--previous", "web")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-11-22T12:00:01.000Z [APP/0] an earlier crash elsewhere\n"+
		"2026-11-22T12:00:02.000Z [APP/1] panic: out of luck\n", res.stdout, "every cell is asked: a crashed instance may restart elsewhere")
	for _, rep := range []*fakeRep{rep1, rep2} {
		reqs := rep.recorded()
		req := reqs[len(reqs)-1].(*repv1.StreamLogsRequest)
		require.True(t, req.GetPrevious())
		require.Equal(t, webV1, req.GetProcessGuid())
		require.False(t, req.GetFollow())
	}

	res = run(t, ft.env, "logs", "--previous", "--index", "1", webV1)
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-11-22T12:00:02.000Z [APP/1] panic: out of luck\n", res.stdout, "cell-2 keeps nothing of index 1: NotFound is no error")

	res = run(t, ft.env, "logs", "--previous", "api")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "ResourceNotFound: no cell keeps the output of a crashed instance of "+apiV2)

	res = run(t, ft.env, "logs", "--previous", "--follow", "web")
	require.Equal(t, commands.ExitUsage, res.code)
	require.Contains(t, res.stderr, "--previous cannot follow")
}

func TestAppEventsFallBackToASmallerWindowWhenTheBBSPrunedTheStart(t *testing.T) {
	events := []*modelsv1.Event{
		crashEvent(9000, webV1, 0, "too old for the smaller window"),
		crashEvent(9999, webV1, 1, "recent crash"),
		{Sequence: 10000, Payload: &modelsv1.Event_TaskRemoved{TaskRemoved: &modelsv1.TaskRemovedEvent{Task: &modelsv1.Task{TaskGuid: "t"}}}},
	}
	history := serveHistory(events)
	var afters []uint64
	var mu sync.Mutex
	ft, _, _ := appFixture(t, func(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
		if req.AfterSequence != nil {
			mu.Lock()
			afters = append(afters, req.GetAfterSequence())
			mu.Unlock()
			if req.GetAfterSequence() < 6000 {
				return models.NewError(models.ErrTypeResyncRequired, "events after %d were pruned", req.GetAfterSequence())
			}
		}
		return history(req, stream)
	})
	res := run(t, ft.env, "app", "web")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Empty(t, res.stderr)
	require.Contains(t, res.stdout, "recent crash")
	require.NotContains(t, res.stdout, "too old")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []uint64{10000 - 5000, 10000 - 625}, afters, "the window shrinks by 8 once")
}
