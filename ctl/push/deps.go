package push

import (
	"context"
	"io"
	"time"

	"google.golang.org/grpc"

	"drover.dev/lib/dockerref"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// BBS is what push asks of the BBS. Each call is bounded by the caller's per-call
// time limit; errors are the BBS's (models errors).
type BBS interface {
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
}

// URLs are the fileserver addresses a definition points at.
type URLs interface {
	// BlobURL is the download URL of a blob.
	BlobURL(key string) string
}

// Stager stages packages into droplets (the stager's StagerService).
type Stager interface {
	// Stage starts a staging and streams its events: started, log lines, then one
	// result or failure. Cancelling ctx cancels the staging.
	Stage(ctx context.Context, req *stagerv1.StageRequest) (grpc.ServerStreamingClient[stagerv1.StageResponse], error)
	// ListStacks lists the stacks the stager stages for.
	ListStacks(ctx context.Context) ([]*stagerv1.Stack, error)
}

// Logs streams the log lines of an LRP's instance from the cell that runs it.
type Logs interface {
	// FollowInstance sends the kept and new lines of one instance (index) of an LRP
	// to emit until its container is gone (the stream ends) or ctx ends.
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
	// Stager stages the app's package (buildpack pushes only).
	Stager Stager
	Logs   Logs
	// Routes may be nil: the rollout then skips waiting for the routers (with a warning).
	Routes RouteLister
	// ScanDir lists the app's files.
	ScanDir func(dir string) ([]Resource, error)
	// Images reads images from registries (docker pushes only).
	Images ImageReader
	// Out receives progress lines.
	Out io.Writer
	// PollInterval is how often instance states are polled; zero means 200 ms.
	PollInterval time.Duration
}
