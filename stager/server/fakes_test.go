package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/callback"
	"drover.dev/stager/config"
	"drover.dev/stager/server"
	"drover.dev/stager/store"
)

// fakeBBS keeps desired tasks; a desired task gets cell "cell-1" at once.
type fakeBBS struct {
	mu       sync.Mutex
	cells    []*modelsv1.CellPresence
	desired  []*bbsv1.DesireTaskRequest
	calls    []string
	noCellID bool
}

func (b *fakeBBS) record(call string) {
	b.mu.Lock()
	b.calls = append(b.calls, call)
	b.mu.Unlock()
}

func (b *fakeBBS) called() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...)
}

func (b *fakeBBS) desiredTasks() []*bbsv1.DesireTaskRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*bbsv1.DesireTaskRequest(nil), b.desired...)
}

func (b *fakeBBS) DesireTask(_ context.Context, in *bbsv1.DesireTaskRequest, _ ...grpc.CallOption) (*bbsv1.DesireTaskResponse, error) {
	b.mu.Lock()
	b.desired = append(b.desired, in)
	b.mu.Unlock()
	b.record("desire " + in.TaskGuid)
	return &bbsv1.DesireTaskResponse{}, nil
}

func (b *fakeBBS) GetTask(_ context.Context, in *bbsv1.GetTaskRequest, _ ...grpc.CallOption) (*bbsv1.GetTaskResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range b.desired {
		if d.TaskGuid == in.TaskGuid {
			cell := "cell-1"
			if b.noCellID {
				cell = ""
			}
			return &bbsv1.GetTaskResponse{Task: &modelsv1.Task{TaskGuid: d.TaskGuid, CellId: cell, State: modelsv1.TaskState_TASK_STATE_RUNNING}}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "no task")
}

func (b *fakeBBS) CancelTask(_ context.Context, in *bbsv1.CancelTaskRequest, _ ...grpc.CallOption) (*bbsv1.CancelTaskResponse, error) {
	b.record("cancel " + in.TaskGuid)
	return &bbsv1.CancelTaskResponse{}, nil
}

func (b *fakeBBS) ResolvingTask(_ context.Context, in *bbsv1.ResolvingTaskRequest, _ ...grpc.CallOption) (*bbsv1.ResolvingTaskResponse, error) {
	b.record("resolving " + in.TaskGuid)
	return &bbsv1.ResolvingTaskResponse{}, nil
}

func (b *fakeBBS) DeleteTask(_ context.Context, in *bbsv1.DeleteTaskRequest, _ ...grpc.CallOption) (*bbsv1.DeleteTaskResponse, error) {
	b.record("delete " + in.TaskGuid)
	return &bbsv1.DeleteTaskResponse{}, nil
}

func (b *fakeBBS) ListCells(context.Context, *bbsv1.ListCellsRequest, ...grpc.CallOption) (*bbsv1.ListCellsResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &bbsv1.ListCellsResponse{Cells: b.cells}, nil
}

// cell is a presence with preloaded rootfses.
func cell(id string, cordoned bool, rootfses ...string) *modelsv1.CellPresence {
	return &modelsv1.CellPresence{CellId: id, RepAddress: "127.0.0.1:1", Cordoned: cordoned,
		RootfsProviders: []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: rootfses}}}
}

// fakeReps hands out one fake rep whose task log stream sends what the test puts in
// lines, and ends when lines is closed.
type fakeReps struct {
	lines chan *repv1.LogLine
	mu    sync.Mutex
	asked []string
}

func (f *fakeReps) For(c *modelsv1.CellPresence) (repv1.RepServiceClient, error) {
	f.mu.Lock()
	f.asked = append(f.asked, c.GetCellId())
	f.mu.Unlock()
	return &fakeRep{lines: f.lines}, nil
}

type fakeRep struct {
	repv1.RepServiceClient
	lines chan *repv1.LogLine
}

func (r *fakeRep) StreamLogs(ctx context.Context, in *repv1.StreamLogsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[repv1.StreamLogsResponse], error) {
	if !in.Follow || in.TaskGuid == "" {
		return nil, status.Error(codes.InvalidArgument, "want a followed task")
	}
	return &logStream{ctx: ctx, lines: r.lines}, nil
}

type logStream struct {
	grpc.ClientStream
	ctx   context.Context
	lines chan *repv1.LogLine
}

func (s *logStream) Recv() (*repv1.StreamLogsResponse, error) {
	select {
	case l, ok := <-s.lines:
		if !ok {
			return nil, io.EOF
		}
		return &repv1.StreamLogsResponse{Lines: []*repv1.LogLine{l}}, nil
	case <-s.ctx.Done():
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
}
func (s *logStream) Header() (metadata.MD, error) { return nil, nil }
func (s *logStream) Context() context.Context     { return s.ctx }

// fakeFiles signs nothing and keeps uploads.
type fakeFiles struct {
	mu      sync.Mutex
	uploads map[string][]byte
}

func (f *fakeFiles) BlobURL(key string) string    { return "http://fs/v1/blobs/" + key }
func (f *fakeFiles) StaticURL(path string) string { return "http://fs/v1/static/" + path }
func (f *fakeFiles) SignedUploadURL(key string, _ time.Duration) string {
	return "http://fs/v1/blobs/" + key + "?signed"
}
func (f *fakeFiles) UploadBlob(_ context.Context, key string, body io.Reader, size int64) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("size %d, read %d", size, len(b))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.uploads == nil {
		f.uploads = map[string][]byte{}
	}
	f.uploads[key] = b
	return nil
}

func (f *fakeFiles) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.uploads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// memStore is an in-memory buildpack store with dense positions.
type memStore struct {
	mu  sync.Mutex
	bps map[string][]store.Buildpack // by stack, in position order
}

func (m *memStore) List(_ context.Context, stack string) ([]store.Buildpack, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var stacks []string
	for s := range m.bps {
		stacks = append(stacks, s)
	}
	sort.Strings(stacks)
	var out []store.Buildpack
	for _, s := range stacks {
		if stack == "" || s == stack {
			for i, b := range m.bps[s] {
				b.Position = i + 1
				out = append(out, b)
			}
		}
	}
	return out, nil
}

func (m *memStore) Get(_ context.Context, stack, name string) (store.Buildpack, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, b := range m.bps[stack] {
		if b.Name == name {
			b.Position = i + 1
			return b, nil
		}
	}
	return store.Buildpack{}, store.ErrNotFound
}

func (m *memStore) Create(_ context.Context, name, stack string, position int, a store.Archive) (store.Buildpack, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bps == nil {
		m.bps = map[string][]store.Buildpack{}
	}
	list := m.bps[stack]
	for _, b := range list {
		if b.Name == name {
			return store.Buildpack{}, store.ErrExists
		}
	}
	if position <= 0 || position > len(list)+1 {
		position = len(list) + 1
	}
	b := store.Buildpack{CreatedAt: time.Now(), UpdatedAt: time.Now()}
	b.Name, b.Stack, b.SHA256, b.Size, b.BlobKey, b.Filename = name, stack, a.SHA256, a.Size, a.BlobKey, a.Filename
	list = append(list[:position-1], append([]store.Buildpack{b}, list[position-1:]...)...)
	m.bps[stack] = list
	b.Position = position
	return b, nil
}

func (m *memStore) Update(_ context.Context, name, stack string, position int, a *store.Archive) (store.Buildpack, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.bps[stack]
	for i, b := range list {
		if b.Name != name {
			continue
		}
		if a != nil {
			b.SHA256, b.Size, b.BlobKey, b.Filename = a.SHA256, a.Size, a.BlobKey, a.Filename
		}
		rest := append(append([]store.Buildpack(nil), list[:i]...), list[i+1:]...)
		if position <= 0 {
			position = i + 1
		}
		position = min(position, len(rest)+1)
		m.bps[stack] = append(rest[:position-1], append([]store.Buildpack{b}, rest[position-1:]...)...)
		b.Position = position
		return b, nil
	}
	return store.Buildpack{}, store.ErrNotFound
}

func (m *memStore) Delete(_ context.Context, name, stack string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, b := range m.bps[stack] {
		if b.Name == name {
			m.bps[stack] = append(m.bps[stack][:i], m.bps[stack][i+1:]...)
			return nil
		}
	}
	return store.ErrNotFound
}

// harness is a stager server on loopback (plaintext) with fake neighbours.
type harness struct {
	bbs      *fakeBBS
	reps     *fakeReps
	files    *fakeFiles
	store    *memStore
	registry *callback.Registry
	cfg      *config.Config
	client   stagerv1.StagerServiceClient
}

func newHarness(t *testing.T, edit ...func(*config.Config)) *harness {
	t.Helper()
	cfg := config.Default()
	cfg.CallbackURL = "https://127.0.0.1:17021"
	for _, e := range edit {
		e(&cfg)
	}
	h := &harness{
		bbs:   &fakeBBS{cells: []*modelsv1.CellPresence{cell("cell-1", false, "bookworm"), cell("cell-2", true, "busybox")}},
		reps:  &fakeReps{lines: make(chan *repv1.LogLine, 100)},
		files: &fakeFiles{}, store: &memStore{}, registry: callback.NewRegistry(), cfg: &cfg,
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(server.MaxRecvMsgBytes))
	stagerv1.RegisterStagerServiceServer(srv, server.New(server.Options{Config: &cfg, BBS: h.bbs, Reps: h.reps, Files: h.files,
		Store: h.store, Registry: h.registry, PollInterval: 10 * time.Millisecond, DrainTimeout: 500 * time.Millisecond}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(server.MaxRecvMsgBytes)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h.client = stagerv1.NewStagerServiceClient(conn)
	return h
}

// register puts buildpacks in the store directly.
func (h *harness) register(t *testing.T, stack string, names ...string) {
	t.Helper()
	for _, n := range names {
		sum := fmt.Sprintf("%064x", len(n))
		if _, err := h.store.Create(context.Background(), n, stack, 0, store.Archive{SHA256: sum, Size: 1, BlobKey: "buildpacks/" + stack + "/" + n + ".zip"}); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually waits for cond with a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
