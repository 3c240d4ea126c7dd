package commands_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// fakeRep serves a canned State and canned log lines over gRPC with mutual TLS and
// records every request. With follow, it sends the kept lines, then each line of
// followLines, then waits until the client goes away.
type fakeRep struct {
	repv1.UnimplementedRepServiceServer
	addr        string
	state       *repv1.StateResponse
	lines       []*repv1.LogLine
	followLines []*repv1.LogLine
	// previous are the kept lines of crashed instances, served for previous requests
	// (NotFound when none matches).
	previous []*repv1.LogLine

	mu       sync.Mutex
	requests []proto.Message
	// evacuating is set by the first Evacuate.
	evacuating bool
}

// startFakeRep serves rep on 127.0.0.1 with the fake BBS's server certificate.
func startFakeRep(t *testing.T, pki testPKI, rep *fakeRep) *fakeRep {
	t.Helper()
	serverTLS, err := pki.server.Server()
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	repv1.RegisterRepServiceServer(srv, rep)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	rep.addr = lis.Addr().String()
	return rep
}

// unreachableAddress is a 127.0.0.1 port nothing listens on.
func unreachableAddress(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

func (r *fakeRep) record(req proto.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, proto.Clone(req))
}

func (r *fakeRep) recorded() []proto.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]proto.Message(nil), r.requests...)
}

func (r *fakeRep) State(_ context.Context, req *repv1.StateRequest) (*repv1.StateResponse, error) {
	r.record(req)
	return r.state, nil
}

func (r *fakeRep) StreamLogs(req *repv1.StreamLogsRequest, stream grpc.ServerStreamingServer[repv1.StreamLogsResponse]) error {
	r.record(req)
	source := r.lines
	if req.GetPrevious() {
		source = r.previous
	}
	var kept []*repv1.LogLine
	for _, l := range source {
		if (req.GetTaskGuid() == "" || l.GetContainerGuid() == req.GetTaskGuid()) &&
			(req.GetProcessGuid() == "" || l.GetProcessGuid() == req.GetProcessGuid()) &&
			(req.Index == nil || l.GetIndex() == req.GetIndex()) {
			kept = append(kept, l)
		}
	}
	if req.GetPrevious() && len(kept) == 0 {
		return status.Error(codes.NotFound, "no crashed instance kept")
	}
	if len(kept) > 0 {
		if err := stream.Send(&repv1.StreamLogsResponse{Lines: kept}); err != nil {
			return err
		}
	}
	if !req.GetFollow() {
		return nil
	}
	for _, l := range r.followLines {
		if err := stream.Send(&repv1.StreamLogsResponse{Lines: []*repv1.LogLine{l}}); err != nil {
			return err
		}
	}
	<-stream.Context().Done()
	return nil
}

// logTime is testNow plus d, in Unix nanoseconds.
func logTime(d time.Duration) int64 { return testNow.Add(d).UnixNano() }

// Evacuate answers whether an earlier Evacuate already started the evacuation.
func (r *fakeRep) Evacuate(_ context.Context, req *repv1.EvacuateRequest) (*repv1.EvacuateResponse, error) {
	r.record(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	already := r.evacuating
	r.evacuating = true
	return &repv1.EvacuateResponse{AlreadyEvacuating: already}, nil
}
