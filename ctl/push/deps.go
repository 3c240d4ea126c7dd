package push

import (
	"context"
	"io"
	"time"

	"drover.dev/lib/dockerref"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// BBS is what push asks of the BBS. Each call is bounded by the caller's per-call
// time limit; errors are the BBS's (models errors).
type BBS interface {
	DesireTask(ctx context.Context, req *bbsv1.DesireTaskRequest) error
	GetTask(ctx context.Context, guid string) (*modelsv1.Task, error)
	CancelTask(ctx context.Context, guid string) error
	ResolvingTask(ctx context.Context, guid string) error
	DeleteTask(ctx context.Context, guid string) error
	// DesiredLRPs lists the desired LRPs of a domain.
	DesiredLRPs(ctx context.Context, domain string) ([]*modelsv1.DesiredLRP, error)
	DesireLRP(ctx context.Context, lrp *modelsv1.DesiredLRP) error
	UpdateDesiredLRP(ctx context.Context, guid string, update *modelsv1.DesiredLRPUpdate) error
	RemoveDesiredLRP(ctx context.Context, guid string) error
	// ActualLRPs lists the instances of one LRP.
	ActualLRPs(ctx context.Context, processGUID string) ([]*modelsv1.ActualLRP, error)
}

// Blobstore is the fileserver: resource matching, package upload and blob URLs.
type Blobstore interface {
	URLs
	MatchResources(ctx context.Context, rs []Resource) ([]Resource, error)
	UploadPackage(ctx context.Context, dir string, all, missing []Resource) (Package, error)
	// BlobSHA256 returns the sha256 of a stored blob (from its ETag); "" when the
	// server does not say.
	BlobSHA256(ctx context.Context, key string) (string, error)
}

// Logs streams the log lines of a task or of an LRP's instance from the cell that
// runs it.
type Logs interface {
	// FollowTask sends the task's kept and new lines to emit until the task's
	// container is gone (the stream ends) or ctx ends.
	FollowTask(ctx context.Context, taskGUID, cellID string, emit func([]*repv1.LogLine)) error
	// FollowInstance does the same for one instance (index) of an LRP.
	FollowInstance(ctx context.Context, processGUID string, index int32, cellID string, emit func([]*repv1.LogLine)) error
}

// ImageReader reads an image's digest and config from its registry (RegistryClient).
type ImageReader interface {
	Image(ctx context.Context, ref dockerref.Ref, creds Credentials) (Image, error)
}

// RouteLister asks the route-emitter which endpoints it registers.
type RouteLister interface {
	ListRoutes(ctx context.Context, processGUID string) ([]*routeemitterv1.Route, error)
}

// Deps are push's neighbours.
type Deps struct {
	BBS       BBS
	Blobstore Blobstore
	Logs      Logs
	// Routes may be nil: the rollout then skips waiting for the routers (with a warning).
	Routes RouteLister
	// ScanDir lists the app's files.
	ScanDir func(dir string) ([]Resource, error)
	// Images reads images from registries (docker pushes only).
	Images ImageReader
	// Out receives progress lines.
	Out io.Writer
	// Random feeds the staging task guid; nil means crypto/rand.
	Random io.Reader
	// PollInterval is how often task and instance states are polled; zero means 200 ms.
	PollInterval time.Duration
}
