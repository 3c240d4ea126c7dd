package handlers

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"drover.dev/bbs/models"
	"drover.dev/executor"
	"drover.dev/lib/authz"
	"drover.dev/lib/grpcserver"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/internal/fakeexec"
)

// fakeExecBBS answers DesiredLRP from a map and records RecordExec calls.
type fakeExecBBS struct {
	mu       sync.Mutex
	desired  map[string]*modelsv1.DesiredLRP
	recorded []*bbsv1.RecordExecRequest
	recErr   error
}

func (f *fakeExecBBS) DesiredLRP(_ context.Context, pg string) (*modelsv1.DesiredLRP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.desired[pg]
	if !ok {
		return nil, models.ErrResourceNotFound
	}
	return d, nil
}

func (f *fakeExecBBS) RecordExec(_ context.Context, req *bbsv1.RecordExecRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.recErr != nil {
		return f.recErr
	}
	f.recorded = append(f.recorded, req)
	return nil
}

func (f *fakeExecBBS) records() []*bbsv1.RecordExecRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*bbsv1.RecordExecRequest(nil), f.recorded...)
}

var operatorID = authz.Identity{Role: authz.RoleOperator, CommonName: "drover-client"}

// serveExec serves the rep behind a guard that gives every caller id; bbs nil leaves
// Exec disabled.
func serveExec(t *testing.T, e *fakeexec.Client, bbs ExecBBS, id authz.Identity) repv1.RepServiceClient {
	t.Helper()
	api := New(testCell, e, nil, nil)
	if bbs != nil {
		api.WithExec(bbs)
	}
	guard, err := authz.NewGuard(authz.GuardOptions{Names: authz.DefaultNames(), Policy: Policy()})
	require.NoError(t, err)
	guard = guard.Plaintext(id)
	srv, _ := grpcserver.NewServer(nil, grpc.ChainStreamInterceptor(guard.StreamInterceptor()))
	api.Register(srv)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///rep", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		api.Wait()
	})
	return repv1.NewRepServiceClient(conn)
}

// execFixture is a cell with one running instance of "pg" index 0 whose LRP allows exec.
func execFixture(t *testing.T) (*fakeexec.Client, *fakeExecBBS) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	e.Put(executor.Container{Guid: "ig-0", State: executor.StateRunning, Tags: map[string]string{
		executor.TagLifecycle: "lrp", executor.TagProcessGuid: "pg", executor.TagProcessIndex: "0", executor.TagDomain: "apps",
	}, RunInfo: &executor.RunInfo{Action: &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: []*modelsv1.Action{
		{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{User: "root"}}},
		{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "app", User: "vcap", Env: []*modelsv1.EnvironmentVariable{{Name: "PORT", Value: "8080"}}}}},
	}}}}}})
	e.Put(executor.Container{Guid: "ig-1", State: executor.StateCreated, Tags: map[string]string{
		executor.TagLifecycle: "lrp", executor.TagProcessGuid: "pg", executor.TagProcessIndex: "1",
	}})
	e.Put(executor.Container{Guid: "ig-closed", State: executor.StateRunning, Tags: map[string]string{
		executor.TagLifecycle: "lrp", executor.TagProcessGuid: "closed", executor.TagProcessIndex: "0",
	}})
	bbs := &fakeExecBBS{desired: map[string]*modelsv1.DesiredLRP{
		"pg":     {ProcessGuid: "pg", AllowSsh: true},
		"closed": {ProcessGuid: "closed"},
	}}
	return e, bbs
}

// execResult is what a client saw of an exec.
type execResult struct {
	stdout, stderr string
	exit           *int32
	err            error // the stream's final error (nil when it ended cleanly)
}

// drain reads the stream to its end.
func drain(stream repv1.RepService_ExecClient) execResult {
	var r execResult
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return r
		}
		if err != nil {
			r.err = err
			return r
		}
		switch p := resp.GetPayload().(type) {
		case *repv1.ExecResponse_Stdout:
			r.stdout += string(p.Stdout)
		case *repv1.ExecResponse_Stderr:
			r.stderr += string(p.Stderr)
		case *repv1.ExecResponse_ExitStatus:
			code := p.ExitStatus
			r.exit = &code
		}
	}
}

// execOnce sends msgs, half-closes, and reads the stream to its end. A Send may fail
// with io.EOF when the server has already ended the stream: the real error is then
// what Recv returns, so sends' errors are ignored and the outcome is read from Recv.
func execOnce(t *testing.T, client repv1.RepServiceClient, msgs ...*repv1.ExecRequest) execResult {
	t.Helper()
	stream, err := client.Exec(ctxT(t))
	require.NoError(t, err)
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break
		}
	}
	_ = stream.CloseSend()
	return drain(stream)
}

func startMsg(s *repv1.ExecStart) *repv1.ExecRequest {
	return &repv1.ExecRequest{Payload: &repv1.ExecRequest_Start{Start: s}}
}

func stdinMsg(b string) *repv1.ExecRequest {
	return &repv1.ExecRequest{Payload: &repv1.ExecRequest_Stdin{Stdin: []byte(b)}}
}

func requireCode(t *testing.T, err error, code codes.Code, contains ...string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, status.Code(err), "%v", err)
	for _, c := range contains {
		require.Contains(t, status.Convert(err).Message(), c)
	}
}

func TestExecIsUnimplementedWithoutWithExec(t *testing.T) {
	e, _ := execFixture(t)
	client := serveExec(t, e, nil, operatorID)
	r := execOnce(t, client, startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}}))
	requireCode(t, r.err, codes.Unimplemented)
}

func TestExecRunsCommandAndReturnsExitStatus(t *testing.T) {
	e, bbs := execFixture(t)
	client := serveExec(t, e, bbs, operatorID)
	r := execOnce(t, client, startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh", "-c", "echo hi; exit 3"},
		Env: []*modelsv1.EnvironmentVariable{{Name: "X", Value: "1"}}}))
	require.NoError(t, r.err)
	require.Equal(t, "hi\n", r.stdout)
	require.NotNil(t, r.exit)
	require.EqualValues(t, 3, *r.exit)

	procs := e.Sim().Interactives("ig-0")
	require.Len(t, procs, 1)
	spec := procs[0].Spec
	require.Equal(t, []string{"sh", "-c", "echo hi; exit 3"}, spec.Args)
	require.Equal(t, "vcap", spec.User, "the instance's run action user")
	require.Equal(t, []string{"PORT=8080", "X=1"}, spec.Env, "the run action's env, then the given")
	require.False(t, spec.TTY)

	recs := bbs.records()
	require.Len(t, recs, 1)
	require.Equal(t, "drover-client", recs[0].GetUser())
	require.Equal(t, []string{"sh", "-c", "echo hi; exit 3"}, recs[0].GetArgs())
	require.Equal(t, "pg", recs[0].GetActualLrpKey().GetProcessGuid())
	require.Equal(t, "apps", recs[0].GetActualLrpKey().GetDomain())
	require.Equal(t, "ig-0", recs[0].GetActualLrpInstanceKey().GetInstanceGuid())
	require.Equal(t, "cell-1", recs[0].GetActualLrpInstanceKey().GetCellId())
}

func TestExecInteractiveWithTTYStdinAndResize(t *testing.T) {
	e, bbs := execFixture(t)
	client := serveExec(t, e, bbs, operatorID)
	stream, err := client.Exec(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, stream.Send(startMsg(&repv1.ExecStart{ProcessGuid: "pg", Index: 0, InstanceGuid: "ig-0", Args: []string{"sh"},
		Tty: true, User: "root", Size: &repv1.TerminalSize{Rows: 24, Columns: 80}})))
	require.NoError(t, stream.Send(stdinMsg("hello\n")))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(resp.GetStdout()), "input echoed by the simulated process")
	require.NoError(t, stream.Send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_Resize{Resize: &repv1.TerminalSize{Rows: 40, Columns: 100}}}))
	require.Eventually(t, func() bool { return len(e.Sim().Interactives("ig-0")[0].Resizes) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, stream.Send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_CloseStdin{CloseStdin: true}}))
	r := drain(stream)
	require.NoError(t, r.err)
	require.NotNil(t, r.exit)
	require.EqualValues(t, 0, *r.exit)
	p := e.Sim().Interactives("ig-0")[0]
	require.Equal(t, []executor.TerminalSize{{Rows: 24, Columns: 80}, {Rows: 40, Columns: 100}}, p.Resizes)
	require.Equal(t, "root", p.Spec.User, "the given user wins")
	require.True(t, p.Spec.TTY)
	require.Len(t, bbs.records(), 1)
	require.True(t, bbs.records()[0].GetTty())
}

func TestExecKilledWhenClientGoesAway(t *testing.T) {
	e, bbs := execFixture(t)
	client := serveExec(t, e, bbs, operatorID)
	ctx, cancel := context.WithCancel(ctxT(t))
	stream, err := client.Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}})))
	require.NoError(t, stream.Send(stdinMsg("ping\n")))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, "ping\n", string(resp.GetStdout()))
	cancel()
	require.Eventually(t, func() bool {
		ps := e.Sim().Interactives("ig-0")
		return len(ps) == 1 && !ps[0].Running
	}, 10*time.Second, 10*time.Millisecond, "the process outlived its client")
}

func TestExecRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		id       authz.Identity
		msgs     []*repv1.ExecRequest
		code     codes.Code
		contains []string
	}{
		{"no start", operatorID, nil, codes.InvalidArgument, []string{"first message must be start"}},
		{"stdin first", operatorID, []*repv1.ExecRequest{stdinMsg("x")}, codes.InvalidArgument, []string{"first message must be start"}},
		{"no args, negative index, no process", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{Index: -1})},
			codes.InvalidArgument, []string{"process_guid: required", "index: must not be negative", "args: required"}},
		{"bad env and dir", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"},
			Env: []*modelsv1.EnvironmentVariable{{Name: ""}, {Name: "A=B"}}, Dir: "tmp"})},
			codes.InvalidArgument, []string{"env[0].name: required", "env[1].name", "dir: must be absolute"}},
		{"too many args", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: make([]string, MaxExecArgs+1)})},
			codes.InvalidArgument, []string{"args[0]"}},
		{"huge arg", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh", strings.Repeat("x", MaxExecArgBytes+1)}})},
			codes.InvalidArgument, []string{"args[1]: at most"}},
		{"huge size", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}, Tty: true, Size: &repv1.TerminalSize{Rows: 70000, Columns: 80}})},
			codes.InvalidArgument, []string{"size:"}},
		{"unknown instance", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Index: 7, Args: []string{"sh"}})},
			codes.NotFound, []string{"index 7"}},
		{"other instance guid", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", InstanceGuid: "ig-x", Args: []string{"sh"}})},
			codes.NotFound, []string{"ig-x"}},
		{"not running", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Index: 1, Args: []string{"sh"}})},
			codes.FailedPrecondition, []string{"not running"}},
		{"allow_ssh false", operatorID, []*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "closed", Args: []string{"sh"}})},
			codes.FailedPrecondition, []string{"allow_ssh"}},
		{"a cell", authz.Identity{Role: authz.RoleCell, Cell: "cell-1", CommonName: "cell:cell-1"},
			[]*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}})}, codes.PermissionDenied, nil},
		{"the bbs", authz.Identity{Role: authz.RoleBBS, CommonName: "bbs"},
			[]*repv1.ExecRequest{startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}})}, codes.PermissionDenied, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, bbs := execFixture(t)
			client := serveExec(t, e, bbs, tc.id)
			r := execOnce(t, client, tc.msgs...)
			requireCode(t, r.err, tc.code, tc.contains...)
			require.Empty(t, bbs.records(), "a refused exec is not recorded")
			for _, guid := range []string{"ig-0", "ig-1", "ig-closed"} {
				require.Empty(t, e.Sim().Interactives(guid), "a refused exec runs nothing")
			}
		})
	}
}

func TestExecProtocolErrorsKillTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		msg      *repv1.ExecRequest
		contains string
	}{
		{"stdin chunk too big", stdinMsg(strings.Repeat("x", MaxExecStdinChunk+1)), "stdin: at most"},
		{"second start", startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}}), "only the first message"},
		{"empty message", &repv1.ExecRequest{}, "empty message"},
		{"bad resize", &repv1.ExecRequest{Payload: &repv1.ExecRequest_Resize{Resize: &repv1.TerminalSize{Rows: 1 << 20}}}, "resize:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, bbs := execFixture(t)
			client := serveExec(t, e, bbs, operatorID)
			r := execOnce(t, client, startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}, Tty: true}), tc.msg)
			requireCode(t, r.err, codes.InvalidArgument, tc.contains)
			require.Nil(t, r.exit)
			require.Eventually(t, func() bool {
				ps := e.Sim().Interactives("ig-0")
				return len(ps) == 1 && !ps[0].Running
			}, 10*time.Second, 10*time.Millisecond)
		})
	}
}

func TestExecNotRecordedIsNotRun(t *testing.T) {
	e, bbs := execFixture(t)
	bbs.recErr = errors.New("bbs down")
	client := serveExec(t, e, bbs, operatorID)
	r := execOnce(t, client, startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh"}}))
	requireCode(t, r.err, codes.Unavailable, "record the exec")
	require.Empty(t, e.Sim().Interactives("ig-0"))
}

func TestExecSpecFindsTheRunAction(t *testing.T) {
	start := &repv1.ExecStart{Args: []string{"ls"}, Tty: true, Size: &repv1.TerminalSize{Rows: 3, Columns: 4}}
	require.Equal(t, executor.InteractiveSpec{Args: []string{"ls"}, TTY: true, Size: executor.TerminalSize{Rows: 3, Columns: 4}}, ExecSpec(start, nil))
	ri := &executor.RunInfo{Action: &modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{Action: &modelsv1.Action{
		Action: &modelsv1.Action_Codependent{Codependent: &modelsv1.CodependentAction{Actions: []*modelsv1.Action{
			{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{User: "app", Env: []*modelsv1.EnvironmentVariable{{Name: "A", Value: "1"}}}}},
			{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{User: "sidecar"}}},
		}}}}}}}}
	spec := ExecSpec(start, ri)
	require.Equal(t, "app", spec.User)
	require.Equal(t, []string{"A=1"}, spec.Env)
}

func TestExecConcurrencyIsBounded(t *testing.T) {
	e, bbs := execFixture(t)
	client := serveExec(t, e, bbs, operatorID)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	for range MaxConcurrentExecs {
		stream, err := client.Exec(ctx)
		require.NoError(t, err)
		require.NoError(t, stream.Send(startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"cat"}})))
	}
	running := func() int {
		n := 0
		for _, p := range e.Sim().Interactives("ig-0") {
			if p.Running {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return running() == MaxConcurrentExecs }, 10*time.Second, 10*time.Millisecond)
	r := execOnce(t, client, startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"cat"}}))
	requireCode(t, r.err, codes.ResourceExhausted, "at once")
	cancel()
	require.Eventually(t, func() bool { return running() == 0 }, 10*time.Second, 10*time.Millisecond)
	r = execOnce(t, client, startMsg(&repv1.ExecStart{ProcessGuid: "pg", Args: []string{"sh", "-c", "exit 0"}}))
	require.NoError(t, r.err, "a slot is free again once the others ended")
}
