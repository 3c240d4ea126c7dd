package commands_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// execRep is a rep whose Exec echoes the input it gets to stdout, writes "err" to
// stderr and exits with code.
type execRep struct {
	repv1.UnimplementedRepServiceServer
	addr string
	code int32
	mu   sync.Mutex
	reqs []*repv1.ExecRequest
}

func (r *execRep) Exec(stream repv1.RepService_ExecServer) error {
	var in []byte
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, proto.CloneOf(req))
		r.mu.Unlock()
		in = append(in, req.GetStdin()...)
		if req.GetCloseStdin() {
			break
		}
	}
	for _, resp := range []*repv1.ExecResponse{
		{Payload: &repv1.ExecResponse_Stdout{Stdout: append([]byte("in:"), in...)}},
		{Payload: &repv1.ExecResponse_Stderr{Stderr: []byte("err\n")}},
		{Payload: &repv1.ExecResponse_ExitStatus{ExitStatus: r.code}},
	} {
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

func (r *execRep) requests() []*repv1.ExecRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*repv1.ExecRequest(nil), r.reqs...)
}

// execFixture is an LRP "app" whose index 1 runs on cell-1 (an execRep) and index 2 is
// not placed.
func execFixture(t *testing.T, code int32) (*fakeTarget, *execRep) {
	t.Helper()
	rep := &execRep{code: code}
	ft := startFakeBBS(t, func(f *fakeBBS) {
		serverTLS, err := f.pki.server.Server()
		require.NoError(t, err)
		srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
		repv1.RegisterRepServiceServer(srv, rep)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		rep.addr = lis.Addr().String()
		f.cells = []*modelsv1.CellPresence{{CellId: "cell-1", RepAddress: rep.addr}}
		f.actual = []*modelsv1.ActualLRP{
			{ProcessGuid: "app", Index: 1, CellId: "cell-1", InstanceGuid: "i1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING},
			{ProcessGuid: "app", Index: 2, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED},
		}
	})
	return ft, rep
}

func TestExecReturnsTheRemoteStatusAndOutput(t *testing.T) {
	ft, rep := execFixture(t, 3)
	res := run(t, ft.env, "exec", "app", "--index", "1", "--", "sh", "-c", "exit 3")
	require.Equal(t, 3, res.code, res.stderr)
	require.Equal(t, "in:", res.stdout)
	require.Equal(t, "err\n", res.stderr, "no droverctl message: the command said what it had to")
	reqs := rep.requests()
	require.Len(t, reqs, 2)
	require.True(t, proto.Equal(&repv1.ExecStart{ProcessGuid: "app", Index: 1, InstanceGuid: "i1", Args: []string{"sh", "-c", "exit 3"}}, reqs[0].GetStart()))
	require.True(t, reqs[1].GetCloseStdin(), "without -i the command gets no input")
}

func TestExecInteractiveSendsInput(t *testing.T) {
	ft, rep := execFixture(t, 0)
	env := ft.env
	env.Stdin = strings.NewReader("hello\n")
	res := run(t, env, "exec", "-i", "-t", "app", "--index", "1", "--", "sh")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "in:hello\n", res.stdout)
	reqs := rep.requests()
	require.True(t, reqs[0].GetStart().GetTty())
	require.Nil(t, reqs[0].GetStart().GetSize(), "input is not a terminal: no size to send")
	require.True(t, reqs[len(reqs)-1].GetCloseStdin())
}

func TestExecRefusals(t *testing.T) {
	ft, rep := execFixture(t, 0)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"exec", "app"}, commands.ExitUsage, "takes APP|GUID -- CMD"},
		{[]string{"exec", "--", "sh"}, commands.ExitUsage, "takes APP|GUID -- CMD"},
		{[]string{"exec", "app", "other", "--", "sh"}, commands.ExitUsage, "takes APP|GUID -- CMD"},
		{[]string{"exec", "app", "--"}, commands.ExitUsage, "needs a command after --"},
		{[]string{"exec", "app", "--index", "2", "--", "sh"}, commands.ExitFailure, "app/2 is not running"},
		{[]string{"exec", "app", "--index", "7", "--", "sh"}, commands.ExitFailure, "no instance app/7"},
	} {
		res := run(t, ft.env, tc.args...)
		require.Equal(t, tc.code, res.code, "%v: %s", tc.args, res.stderr)
		require.Contains(t, res.stderr, tc.msg, "%v", tc.args)
	}
	require.Empty(t, rep.requests(), "nothing reached the rep")
}

func TestEnableAndDisableSSH(t *testing.T) {
	ft, _ := execFixture(t, 0)
	for _, tc := range []struct {
		cmd  string
		want bool
	}{{"enable-ssh", true}, {"disable-ssh", false}} {
		res := run(t, ft.env, tc.cmd, "app")
		require.Equal(t, commands.ExitOK, res.code, res.stderr)
		req, ok := ft.bbs.lastRequest(t).(*bbsv1.UpdateDesiredLRPRequest)
		require.True(t, ok)
		require.Equal(t, "app", req.GetProcessGuid())
		require.NotNil(t, req.GetUpdate().AllowSsh)
		require.Equal(t, tc.want, req.GetUpdate().GetAllowSsh())
	}
}
