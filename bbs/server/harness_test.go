package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"drover.dev/bbs/client"
	"drover.dev/bbs/events"
	"drover.dev/bbs/server"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	repclient "drover.dev/rep/client"
)

// waitFor is how long tests wait for asynchronous side effects.
const waitFor = 10 * time.Second

// harness is a BBS server on a fresh database, reached over bufconn, with a fake
// auctioneer and a fake rep as neighbours.
type harness struct {
	t          *testing.T
	db         *store.Postgres
	server     *server.Server
	client     *client.Client
	auctioneer *fakeAuctioneer
	rep        *fakeRep
	// registry receives the server's metrics.
	registry *prometheus.Registry
}

// harnessOptions adjust a harness.
type harnessOptions struct {
	hub        events.HubOptions
	httpClient *http.Client
	// clock, when set, is the store's time source.
	clock *storetest.Clock
	// wrapDB, when set, wraps the store the server uses (a seam for races).
	wrapDB func(store.DB) store.DB
}

func newHarness(t *testing.T) *harness {
	return newHarnessWith(t, harnessOptions{})
}

func newHarnessWith(t *testing.T, opts harnessOptions) *harness {
	t.Helper()
	logger := testLogger()
	cfg := store.Config{}
	if opts.clock != nil {
		cfg.Clock = opts.clock.Now
	}
	db := storetest.NewStoreWithConfig(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())

	if opts.hub.PollInterval == 0 {
		opts.hub.PollInterval = 50 * time.Millisecond
	}
	hub := events.NewHub(db, opts.hub, logger)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(ctx) }()

	h := &harness{t: t, db: db, auctioneer: &fakeAuctioneer{}, rep: &fakeRep{}, registry: prometheus.NewRegistry()}
	auctioneerConn := serveBufconn(t, func(s *grpc.Server) {
		auctioneerv1.RegisterAuctioneerServiceServer(s, h.auctioneer)
	})
	h.rep.address = serveTCP(t, func(s *grpc.Server) { repv1.RegisterRepServiceServer(s, h.rep) })

	reps := repclient.NewPool(nil, repclient.Options{})
	t.Cleanup(func() { _ = reps.Close() })
	var serverDB store.DB = db
	if opts.wrapDB != nil {
		serverDB = opts.wrapDB(db)
	}
	h.server = server.New(server.Deps{
		DB:         serverDB,
		Hub:        hub,
		Auctioneer: auctioneerv1.NewAuctioneerServiceClient(auctioneerConn),
		Reps:       reps,
		Logger:     logger,
		HTTPClient: opts.httpClient,
		Registerer: h.registry,
	})
	bbsConn := serveBufconn(t, func(s *grpc.Server) { h.server.Register(s) },
		grpc.ChainUnaryInterceptor(server.UnaryInterceptor(logger)),
		grpc.ChainStreamInterceptor(server.StreamInterceptor(logger)))
	h.client = &client.Client{
		Conn:                     bbsConn,
		DesiredLRPServiceClient:  bbsv1.NewDesiredLRPServiceClient(bbsConn),
		ActualLRPServiceClient:   bbsv1.NewActualLRPServiceClient(bbsConn),
		TaskServiceClient:        bbsv1.NewTaskServiceClient(bbsConn),
		DomainServiceClient:      bbsv1.NewDomainServiceClient(bbsConn),
		CellServiceClient:        bbsv1.NewCellServiceClient(bbsConn),
		LockServiceClient:        bbsv1.NewLockServiceClient(bbsConn),
		EventServiceClient:       bbsv1.NewEventServiceClient(bbsConn),
		ConvergenceServiceClient: bbsv1.NewConvergenceServiceClient(bbsConn),
	}
	// Cleanups run last-in first-out: the server's side effects finish before the
	// hub stops and the database is dropped.
	t.Cleanup(func() {
		cancel()
		<-hubDone
	})
	t.Cleanup(h.server.Wait)
	return h
}

// testLogger logs to stderr when DROVER_TEST_LOGS is set, else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("DROVER_TEST_LOGS") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// serveBufconn serves a gRPC server in memory and returns a connection to it.
func serveBufconn(t *testing.T, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(opts...)
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(client.MaxMessageBytes)))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	return conn
}

// serveTCP serves a gRPC server on a free loopback port and returns its address.
func serveTCP(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// ctx is a per-call context with a deadline.
func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	h.t.Cleanup(cancel)
	return ctx
}

// eventually polls cond in the test's goroutine until it holds or the deadline passes.
func (h *harness) eventually(cond func() bool, msg string) {
	h.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("not before the deadline: %s", msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireCode checks that err is a gRPC status with the given code.
func requireCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code.String(), status.Code(err).String(), "error: %v", err)
}

// fakeAuctioneer records the placement requests it receives.
type fakeAuctioneer struct {
	auctioneerv1.UnimplementedAuctioneerServiceServer
	mu    sync.Mutex
	lrps  []*modelsv1.LRPStartRequest
	tasks []*modelsv1.TaskStartRequest
	// taskBatches are the task guids of each RequestTaskAuctions call, in call order.
	taskBatches [][]string
}

func (f *fakeAuctioneer) RequestLRPAuctions(_ context.Context, req *auctioneerv1.RequestLRPAuctionsRequest) (*auctioneerv1.RequestLRPAuctionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lrps = append(f.lrps, req.GetRequests()...)
	return &auctioneerv1.RequestLRPAuctionsResponse{}, nil
}

func (f *fakeAuctioneer) RequestTaskAuctions(_ context.Context, req *auctioneerv1.RequestTaskAuctionsRequest) (*auctioneerv1.RequestTaskAuctionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks = append(f.tasks, req.GetRequests()...)
	batch := []string{}
	for _, r := range req.GetRequests() {
		batch = append(batch, r.GetTaskGuid())
	}
	f.taskBatches = append(f.taskBatches, batch)
	return &auctioneerv1.RequestTaskAuctionsResponse{}, nil
}

// lrpIndices returns the indices requested for a process guid, in request order.
func (f *fakeAuctioneer) lrpIndices(processGuid string) []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var indices []int32
	for _, r := range f.lrps {
		if r.GetProcessGuid() == processGuid {
			indices = append(indices, r.GetIndices()...)
		}
	}
	return indices
}

// taskGuids returns the task guids requested, in request order.
func (f *fakeAuctioneer) taskGuids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var guids []string
	for _, r := range f.tasks {
		guids = append(guids, r.GetTaskGuid())
	}
	return guids
}

// fakeRep records the stops and cancels it is asked for.
type fakeRep struct {
	repv1.UnimplementedRepServiceServer
	address string
	mu      sync.Mutex
	stops   []*repv1.StopLRPInstanceRequest
	cancels []string
}

func (f *fakeRep) StopLRPInstance(_ context.Context, req *repv1.StopLRPInstanceRequest) (*repv1.StopLRPInstanceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, req)
	return &repv1.StopLRPInstanceResponse{}, nil
}

func (f *fakeRep) CancelTask(_ context.Context, req *repv1.CancelTaskRequest) (*repv1.CancelTaskResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, req.GetTaskGuid())
	return &repv1.CancelTaskResponse{}, nil
}

// stopped returns the stop requests received so far.
func (f *fakeRep) stopped() []*repv1.StopLRPInstanceRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*repv1.StopLRPInstanceRequest(nil), f.stops...)
}

// cancelled returns the task guids cancelled so far.
func (f *fakeRep) cancelled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancels...)
}

// listActualLRPs reads the whole ListActualLRPs stream and counts its messages.
func (h *harness) listActualLRPs(req *bbsv1.ListActualLRPsRequest) (rows []*modelsv1.ActualLRP, messages int) {
	h.t.Helper()
	stream, err := h.client.ListActualLRPs(h.ctx(), req)
	require.NoError(h.t, err)
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return rows, messages
		}
		require.NoError(h.t, err)
		messages++
		rows = append(rows, resp.GetActualLrps()...)
	}
}

// droppedSideEffects is the server's count of side effects dropped for reason.
func (h *harness) droppedSideEffects(pool, reason string) float64 {
	h.t.Helper()
	families, err := h.registry.Gather()
	require.NoError(h.t, err)
	for _, f := range families {
		if f.GetName() != "drover_bbs_side_effects_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pool"] == pool && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
