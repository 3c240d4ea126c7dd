package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/lib/authz"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/callback"
	"drover.dev/stager/config"
	"drover.dev/stager/server"
)

const pkgSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func stageRequest(buildpacks ...string) *stagerv1.StageRequest {
	return &stagerv1.StageRequest{AppGuid: "app-1", AppName: "app", PackageKey: "packages/p.zip", PackageSha256: pkgSHA, Buildpacks: buildpacks}
}

func logLine(guid, text string) *repv1.LogLine {
	return &repv1.LogLine{ContainerGuid: guid, Source: "STG", Stream: "stdout", Text: text}
}

// started opens a Stage stream and reads its started event.
func started(t *testing.T, ctx context.Context, h *harness, req *stagerv1.StageRequest) (grpc.ServerStreamingClient[stagerv1.StageResponse], *stagerv1.StagingStarted) {
	t.Helper()
	stream, err := h.client.Stage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatalf("first event: %v", err)
	}
	if first.GetStarted() == nil {
		t.Fatalf("first event %v, want started", first)
	}
	return stream, first.GetStarted()
}

// rest reads the stream to its end: the log texts and the final event.
func rest(t *testing.T, stream grpc.ServerStreamingClient[stagerv1.StageResponse]) ([]string, *stagerv1.StageResponse) {
	t.Helper()
	var logs []string
	var final *stagerv1.StageResponse
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return logs, final
		}
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		if final != nil {
			t.Fatalf("event after the final one: %v", ev)
		}
		if l := ev.GetLog(); l != nil {
			logs = append(logs, l.Text)
		} else {
			final = ev
		}
	}
}

func deliver(t *testing.T, h *harness, c callback.Completion) {
	t.Helper()
	eventually(t, "a waiter for "+c.TaskGUID, func() bool { return h.registry.Deliver(c) })
}

func TestStageToResult(t *testing.T) {
	h := newHarness(t)
	h.register(t, "bookworm", "staticfile", "nodejs", "go")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, st := started(t, ctx, h, stageRequest())
	if !strings.HasPrefix(st.TaskGuid, "staging-app-1-") || st.Stack != "bookworm" || fmt.Sprint(st.Buildpacks) != "[staticfile nodejs go]" {
		t.Fatalf("started %v", st)
	}
	desired := h.bbs.desiredTasks()
	if len(desired) != 1 || desired[0].Domain != authz.StagingDomain || desired[0].TaskGuid != st.TaskGuid ||
		desired[0].TaskDefinition.Rootfs != "preloaded:bookworm" || !strings.HasSuffix(desired[0].TaskDefinition.CompletionCallbackUrl, "/v1/stagings/"+st.TaskGuid+"/completed") {
		t.Fatalf("desired %v", desired)
	}
	h.reps.lines <- logLine(st.TaskGuid, "-----> Detected buildpack: nodejs")
	h.reps.lines <- logLine(st.TaskGuid, "added 57 packages")
	res := fmt.Sprintf(`{"buildpack":"nodejs","buildpacks":["nodejs"],"detect_output":"nodejs","start_command":"npm start","process_types":{"web":"npm start"},"droplet_sha256":"%s","droplet_size":123}`, pkgSHA)
	eventually(t, "the log stream", func() bool { return len(h.reps.lines) == 0 })
	deliver(t, h, callback.Completion{TaskGUID: st.TaskGuid, Result: res})
	h.reps.lines <- logLine(st.TaskGuid, "late line")
	close(h.reps.lines)
	logs, final := rest(t, stream)
	if fmt.Sprint(logs) != "[-----> Detected buildpack: nodejs added 57 packages late line]" {
		t.Errorf("logs %q", logs)
	}
	r := final.GetResult()
	if r == nil {
		t.Fatalf("final %v, want a result", final)
	}
	if r.TaskGuid != st.TaskGuid || r.DropletKey != "droplets/app-1/"+st.TaskGuid+".tgz" || r.DropletSha256 != pkgSHA || r.DropletSize != 123 ||
		r.Buildpack != "nodejs" || r.StartCommand != "npm start" || r.ProcessTypes["web"] != "npm start" || r.Stack != "bookworm" ||
		r.Rootfs != "preloaded:bookworm" || r.User != "vcap" || r.LifecycleUrl != "http://fs/v1/static/lifecycle/lifecycle.tgz" || r.CellId != "cell-1" {
		t.Errorf("result %v", r)
	}
	for _, c := range h.bbs.called() {
		if strings.HasPrefix(c, "cancel") || strings.HasPrefix(c, "delete") {
			t.Errorf("a completed staging called %s (the BBS deletes it after the callback)", c)
		}
	}
}

func TestStageToFailure(t *testing.T) {
	h := newHarness(t)
	h.register(t, "bookworm", "nodejs", "go")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, st := started(t, ctx, h, stageRequest("nodejs"))
	if fmt.Sprint(st.Buildpacks) != "[nodejs]" {
		t.Errorf("started %v", st)
	}
	run := h.bbs.desiredTasks()[0].TaskDefinition.Action.GetSerial().GetActions()
	var args string
	for _, a := range run {
		if a.GetRun() != nil {
			args = strings.Join(a.GetRun().Args, " ")
		}
	}
	if !strings.Contains(args, "-order nodejs -skip-detect") {
		t.Errorf("builder args %q", args)
	}
	h.reps.lines <- logLine(st.TaskGuid, "nodejs: package.json is not valid JSON")
	h.reps.lines <- logLine(st.TaskGuid, "builder: buildpack nodejs: bin/supply exited with status 1")
	close(h.reps.lines)
	eventually(t, "the log stream", func() bool { return len(h.reps.lines) == 0 })
	deliver(t, h, callback.Completion{TaskGUID: st.TaskGuid, Failed: true, FailureReason: "Exited with status 223"})
	logs, final := rest(t, stream)
	f := final.GetFailure()
	if f == nil || f.Reason != "buildpack nodejs: bin/supply exited with status 1" || len(f.LastLines) != 2 || f.TaskGuid != st.TaskGuid || f.CellId != "cell-1" {
		t.Fatalf("final %v (logs %q)", final, logs)
	}
}

func TestStageWithABadResultFails(t *testing.T) {
	h := newHarness(t)
	h.register(t, "bookworm", "nodejs")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, st := started(t, ctx, h, stageRequest())
	close(h.reps.lines)
	deliver(t, h, callback.Completion{TaskGUID: st.TaskGuid, Result: `{"buildpack":"x"}`})
	_, final := rest(t, stream)
	if f := final.GetFailure(); f == nil || !strings.Contains(f.Reason, "staging result") {
		t.Fatalf("final %v", final)
	}
}

func TestClientGoneCancelsAndDeletesTheTask(t *testing.T) {
	h := newHarness(t)
	h.register(t, "bookworm", "nodejs")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	streamCtx, goAway := context.WithCancel(ctx)
	_, st := started(t, streamCtx, h, stageRequest())
	goAway()
	want := []string{"cancel " + st.TaskGuid, "resolving " + st.TaskGuid, "delete " + st.TaskGuid}
	eventually(t, "cancel, resolve and delete", func() bool {
		calls := h.bbs.called()
		for _, w := range want {
			if !contains(calls, w) {
				return false
			}
		}
		return true
	})
	eventually(t, "the waiter to go", func() bool { return !h.registry.Deliver(callback.Completion{TaskGUID: st.TaskGuid}) })
}

func TestStagingTimeoutFailsAndCleansUp(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.StagingTimeout = config.Default().StagingTimeout / 3000 }) // 300ms
	h.register(t, "bookworm", "nodejs")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, st := started(t, ctx, h, stageRequest())
	_, final := rest(t, stream)
	if f := final.GetFailure(); f == nil || !strings.Contains(f.Reason, "staging timed out after 300ms") {
		t.Fatalf("final %v", final)
	}
	calls := h.bbs.called()
	for _, w := range []string{"cancel ", "resolving ", "delete "} {
		if !contains(calls, w+st.TaskGuid) {
			t.Errorf("no %s in %v", w, calls)
		}
	}
}

func TestStageRefusesBeforeAnyTask(t *testing.T) {
	cases := []struct {
		name string
		req  *stagerv1.StageRequest
		code codes.Code
		msg  string
	}{
		{"invalid request", &stagerv1.StageRequest{AppGuid: "a/b", PackageSha256: "x"}, codes.InvalidArgument, "app_guid: must match"},
		{"all bad fields named", &stagerv1.StageRequest{AppGuid: "a/b", PackageSha256: "x"}, codes.InvalidArgument, "package_sha256"},
		{"unknown buildpack", func() *stagerv1.StageRequest { return stageRequest("go", "nope") }(), codes.InvalidArgument, `buildpack "nope" is not registered for stack "bookworm"`},
		{"stack no cell serves", func() *stagerv1.StageRequest { r := stageRequest(); r.Stack = "busybox"; return r }(), codes.FailedPrecondition, `no cell serves stack "busybox"`},
		{"unknown stack", func() *stagerv1.StageRequest { r := stageRequest(); r.Stack = "nostack"; return r }(), codes.FailedPrecondition, `no cell serves stack "nostack"`},
		{"no buildpacks for the stack", func() *stagerv1.StageRequest { r := stageRequest(); r.Stack = "empty"; return r }(), codes.FailedPrecondition, `no buildpacks are registered for stack "empty"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *config.Config) {
				c.Stacks = append(c.Stacks, config.Stack{Name: "empty", RootFS: "preloaded:bookworm", User: "vcap"})
			})
			h.register(t, "bookworm", "go")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stream, err := h.client.Stage(ctx, tc.req)
			if err == nil {
				_, err = stream.Recv()
			}
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("err = %v, want %s %q", err, tc.code, tc.msg)
			}
			if d := h.bbs.desiredTasks(); len(d) != 0 {
				t.Fatalf("desired %v", d)
			}
		})
	}
}

func TestListStacks(t *testing.T) {
	h := newHarness(t)
	resp, err := h.client.ListStacks(context.Background(), &stagerv1.ListStacksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(resp.Stacks)
	if len(resp.Stacks) != 2 || resp.Stacks[0].Name != "bookworm" || !resp.Stacks[0].Default || fmt.Sprint(resp.Stacks[0].Cells) != "[cell-1]" ||
		resp.Stacks[1].Name != "busybox" || resp.Stacks[1].Default || len(resp.Stacks[1].Cells) != 0 || resp.Stacks[1].User != "root" {
		t.Fatalf("stacks %s (the cordoned cell-2 must not serve busybox)", got)
	}
}

func TestPolicyRulesEveryMethod(t *testing.T) {
	methods := authz.PackageMethods("drover.stager.v1")
	if len(methods) != 6 {
		t.Fatalf("methods %v", methods)
	}
	p := server.Policy()
	if missing := p.Unruled(methods); len(missing) != 0 {
		t.Fatalf("no rule for %v", missing)
	}
	for _, m := range methods {
		if fmt.Sprint(p[m].Roles) != "[operator]" {
			t.Errorf("%s admits %v, want operators only", m, p[m].Roles)
		}
	}
}
