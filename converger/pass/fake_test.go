package pass

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// fakeBBS is the converger's BBS neighbour: it serves a fixed snapshot, records every
// request and answers Apply calls through decide (default: everything applied).
type fakeBBS struct {
	bbsv1.ConvergenceServiceClient // nil: calls the converger never makes panic

	mu          sync.Mutex
	snapshot    []*bbsv1.SnapshotResponse
	snapshotErr error
	lrpErr      error
	taskErr     error
	reportErr   error
	refuse      map[string]string // action reason → refused reason
	lrpCalls    [][]*bbsv1.LRPAction
	taskCalls   [][]*bbsv1.TaskAction
	reports     []*bbsv1.ConvergencePass
	auctions    []*bbsv1.RequestAuctionsRequest
	deferred    []bool // defer_auction of every Apply call
}

func (f *fakeBBS) RequestAuctions(_ context.Context, req *bbsv1.RequestAuctionsRequest, _ ...grpc.CallOption) (*bbsv1.RequestAuctionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auctions = append(f.auctions, proto.Clone(req).(*bbsv1.RequestAuctionsRequest))
	return &bbsv1.RequestAuctionsResponse{}, nil
}

func (f *fakeBBS) Snapshot(context.Context, *bbsv1.SnapshotRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.SnapshotResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snapshotErr != nil {
		return nil, f.snapshotErr
	}
	return &fakeStream{parts: f.snapshot}, nil
}

func (f *fakeBBS) ApplyLRPActions(_ context.Context, req *bbsv1.ApplyLRPActionsRequest, _ ...grpc.CallOption) (*bbsv1.ApplyLRPActionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lrpCalls = append(f.lrpCalls, req.GetActions())
	f.deferred = append(f.deferred, req.GetDeferAuction())
	if f.lrpErr != nil {
		return nil, f.lrpErr
	}
	resp := &bbsv1.ApplyLRPActionsResponse{}
	for _, a := range req.GetActions() {
		refused := f.refuse[a.GetReason()]
		resp.Results = append(resp.Results, &bbsv1.LRPActionResult{Applied: refused == "", RefusedReason: refused})
	}
	return resp, nil
}

func (f *fakeBBS) ApplyTaskActions(_ context.Context, req *bbsv1.ApplyTaskActionsRequest, _ ...grpc.CallOption) (*bbsv1.ApplyTaskActionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taskCalls = append(f.taskCalls, req.GetActions())
	f.deferred = append(f.deferred, req.GetDeferAuction())
	if f.taskErr != nil {
		return nil, f.taskErr
	}
	resp := &bbsv1.ApplyTaskActionsResponse{}
	for _, a := range req.GetActions() {
		refused := f.refuse[a.GetReason()]
		resp.Results = append(resp.Results, &bbsv1.TaskActionResult{Applied: refused == "", RefusedReason: refused})
	}
	return resp, nil
}

func (f *fakeBBS) ReportConvergencePass(_ context.Context, req *bbsv1.ReportConvergencePassRequest, _ ...grpc.CallOption) (*bbsv1.ReportConvergencePassResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, proto.Clone(req.GetPass()).(*bbsv1.ConvergencePass))
	if f.reportErr != nil {
		return nil, f.reportErr
	}
	return &bbsv1.ReportConvergencePassResponse{}, nil
}

// fakeStream replays snapshot parts.
type fakeStream struct {
	grpc.ClientStream
	parts []*bbsv1.SnapshotResponse
}

func (s *fakeStream) Recv() (*bbsv1.SnapshotResponse, error) {
	if len(s.parts) == 0 {
		return nil, io.EOF
	}
	p := s.parts[0]
	s.parts = s.parts[1:]
	return p, nil
}

// logLines is a concurrency-safe JSON log sink.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// logger is a debug-level JSON logger writing to l.
func (l *logLines) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// messages returns the decoded lines whose msg is msg.
func (l *logLines) messages(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(l.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("log line: %v", err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}
