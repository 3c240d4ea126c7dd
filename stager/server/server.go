// Package server is the stager's gRPC service: thin handlers over the staging core
// (stager/staging), the buildpack store and the staging runner, which desires a staging
// task on the BBS, follows its logs on its cell's rep and waits for its completion
// callback (stager/callback).
package server

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"drover.dev/lib/logging"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/callback"
	"drover.dev/stager/config"
	"drover.dev/stager/metrics"
	"drover.dev/stager/staging"
	"drover.dev/stager/store"
)

// MaxRecvMsgBytes is the largest request the stager's gRPC server accepts (a
// buildpack archive of staging.MaxArchiveBytes and its fields).
const MaxRecvMsgBytes = staging.MaxArchiveBytes + 2<<20

// Defaults of Options.
const (
	DefaultPollInterval = 200 * time.Millisecond
	DefaultDrainTimeout = 3 * time.Second
	DefaultCleanup      = 30 * time.Second
	// UploadTTL is how long the staging task's signed upload URLs are valid beyond the
	// staging timeout.
	UploadTTL = 10 * time.Minute
)

// BBS is what the stager calls on the BBS (bbs/client.Client is one).
type BBS interface {
	DesireTask(ctx context.Context, in *bbsv1.DesireTaskRequest, opts ...grpc.CallOption) (*bbsv1.DesireTaskResponse, error)
	GetTask(ctx context.Context, in *bbsv1.GetTaskRequest, opts ...grpc.CallOption) (*bbsv1.GetTaskResponse, error)
	CancelTask(ctx context.Context, in *bbsv1.CancelTaskRequest, opts ...grpc.CallOption) (*bbsv1.CancelTaskResponse, error)
	ResolvingTask(ctx context.Context, in *bbsv1.ResolvingTaskRequest, opts ...grpc.CallOption) (*bbsv1.ResolvingTaskResponse, error)
	DeleteTask(ctx context.Context, in *bbsv1.DeleteTaskRequest, opts ...grpc.CallOption) (*bbsv1.DeleteTaskResponse, error)
	ListCells(ctx context.Context, in *bbsv1.ListCellsRequest, opts ...grpc.CallOption) (*bbsv1.ListCellsResponse, error)
}

// Reps hands out rep clients by cell (rep/client.Pool is one).
type Reps interface {
	For(cell *modelsv1.CellPresence) (repv1.RepServiceClient, error)
}

// Fileserver signs URLs and uploads blobs (fileserver/client.Client is one).
type Fileserver interface {
	staging.URLs
	UploadBlob(ctx context.Context, key string, body io.Reader, size int64) error
}

// Store is the buildpack store (store.Store is one).
type Store interface {
	List(ctx context.Context, stack string) ([]store.Buildpack, error)
	Get(ctx context.Context, stack, name string) (store.Buildpack, error)
	Create(ctx context.Context, name, stack string, position int, a store.Archive) (store.Buildpack, error)
	Update(ctx context.Context, name, stack string, position int, a *store.Archive) (store.Buildpack, error)
	Delete(ctx context.Context, name, stack string) error
}

// Options build a Server.
type Options struct {
	Config   *config.Config
	BBS      BBS
	Reps     Reps
	Files    Fileserver
	Store    Store
	Registry *callback.Registry
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// Random feeds task guids (default crypto/rand).
	Random io.Reader
	// PollInterval is how often a staging asks the BBS for its task's cell.
	PollInterval time.Duration
	// DrainTimeout is how long the log stream may run on after the completion.
	DrainTimeout time.Duration
	// CleanupTimeout bounds cancelling and deleting an abandoned task.
	CleanupTimeout time.Duration
}

// Server implements stagerv1.StagerServiceServer.
type Server struct {
	stagerv1.UnimplementedStagerServiceServer
	opts   Options
	cfg    *config.Config
	logger *slog.Logger
}

// New builds the server.
func New(opts Options) *Server {
	if opts.Random == nil {
		opts.Random = rand.Reader
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.CleanupTimeout <= 0 {
		opts.CleanupTimeout = DefaultCleanup
	}
	if opts.Registry == nil {
		opts.Registry = callback.NewRegistry()
	}
	if opts.Metrics == nil {
		opts.Metrics, _ = metrics.New(nil) // cannot fail unregistered
	}
	return &Server{opts: opts, cfg: opts.Config, logger: logging.OrDiscard(opts.Logger)}
}
