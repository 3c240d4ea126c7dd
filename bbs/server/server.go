// Package server implements the BBS gRPC services (drover.bbs.v1) over the storage
// contract store.DB. Handlers are thin: request → store call → side effects →
// response. Side effects (auction requests, stopping instances on their reps, task
// completion callbacks) are best effort: they run in bounded pools, are logged, never
// returned to the caller (nor waited for past the request's end: a full pool drops
// them), are cancelled on Shutdown, and the converger repairs whatever they miss.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"drover.dev/bbs/events"
	"drover.dev/bbs/store"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	repclient "drover.dev/rep/client"
)

// Defaults of Deps.
const (
	DefaultMaxTaskRetries      = 3
	DefaultTaskCallbackWorkers = 1000
	DefaultSideEffectTimeout   = 5 * time.Second
	DefaultCallbackTimeout     = 20 * time.Second
	// ListActualLRPsBatchSize is how many rows one ListActualLRPs message carries.
	ListActualLRPsBatchSize = 1000
	// RetireActualLRPAttempts is how often a retire tries to stop an instance (as upstream).
	RetireActualLRPAttempts = 5
)

// maxBackgroundWork bounds the side effects in flight at once (task callbacks have their
// own pool); a handler waits for a slot only while its request lives (goBackgroundFor).
const maxBackgroundWork = 1000

// Deps is what the server needs.
type Deps struct {
	DB  store.DB
	Hub *events.Hub
	// Auctioneer receives placement requests; nil means no auctioneer is configured.
	Auctioneer auctioneerv1.AuctioneerServiceClient
	// Reps connects to cells' reps to stop instances and cancel tasks.
	Reps   *repclient.Pool
	Logger *slog.Logger
	// MaxTaskRetries is how many rejections a task survives (default 3).
	MaxTaskRetries int
	// HTTPClient posts task completion callbacks (default: a client with a 20 s timeout).
	HTTPClient *http.Client
	// TaskCallbackWorkers bounds the callbacks in flight (default 1000).
	TaskCallbackWorkers int
	// SideEffectTimeout bounds each auctioneer or rep call (default 5 s).
	SideEffectTimeout time.Duration
	// Registerer, when set, receives drover_bbs_side_effects_dropped_total{pool,reason}.
	Registerer prometheus.Registerer
}

// Server implements every drover.bbs.v1 service.
type Server struct {
	db         store.DB
	hub        *events.Hub
	auctioneer auctioneerv1.AuctioneerServiceClient
	reps       *repclient.Pool
	logger     *slog.Logger

	maxTaskRetries    int
	httpClient        *http.Client
	sideEffectTimeout time.Duration

	// ctx is the context side effects run under; Shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// mu orders starting a side effect (background.Add) with Shutdown (stopping).
	mu            sync.Mutex
	stopping      chan struct{}
	background    sync.WaitGroup
	backgroundSem chan struct{}
	callbackSem   chan struct{}
	dropped       *prometheus.CounterVec
}

// New makes a server from its dependencies, filling defaults.
func New(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.MaxTaskRetries <= 0 {
		d.MaxTaskRetries = DefaultMaxTaskRetries
	}
	if d.HTTPClient == nil {
		d.HTTPClient = &http.Client{Timeout: DefaultCallbackTimeout}
	}
	if d.TaskCallbackWorkers <= 0 {
		d.TaskCallbackWorkers = DefaultTaskCallbackWorkers
	}
	if d.SideEffectTimeout <= 0 {
		d.SideEffectTimeout = DefaultSideEffectTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		ctx:               ctx,
		cancel:            cancel,
		stopping:          make(chan struct{}),
		dropped:           newDroppedCounter(d.Registerer),
		db:                d.DB,
		hub:               d.Hub,
		auctioneer:        d.Auctioneer,
		reps:              d.Reps,
		logger:            d.Logger,
		maxTaskRetries:    d.MaxTaskRetries,
		httpClient:        d.HTTPClient,
		sideEffectTimeout: d.SideEffectTimeout,
		backgroundSem:     make(chan struct{}, maxBackgroundWork),
		callbackSem:       make(chan struct{}, d.TaskCallbackWorkers),
	}
}

// Register registers the eight drover.bbs.v1 services on r.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	bbsv1.RegisterDesiredLRPServiceServer(r, &desiredLRPService{Server: s})
	bbsv1.RegisterActualLRPServiceServer(r, &actualLRPService{Server: s})
	bbsv1.RegisterTaskServiceServer(r, &taskService{Server: s})
	bbsv1.RegisterDomainServiceServer(r, &domainService{Server: s})
	bbsv1.RegisterCellServiceServer(r, &cellService{Server: s})
	bbsv1.RegisterLockServiceServer(r, &lockService{Server: s})
	bbsv1.RegisterEventServiceServer(r, &eventService{Server: s})
	bbsv1.RegisterConvergenceServiceServer(r, &convergenceService{Server: s})
}

// withTimeout bounds one outbound call of a side effect.
func (s *Server) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.sideEffectTimeout)
}
