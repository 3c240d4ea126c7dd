package executor

import (
	"context"
	"errors"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// State is where a container is in its life:
// reserved → initializing → created → running → completed (completed from any state).
type State string

// Container states.
const (
	StateReserved     State = "reserved"
	StateInitializing State = "initializing"
	StateCreated      State = "created"
	StateRunning      State = "running"
	StateCompleted    State = "completed"
)

// Tag keys the rep sets on containers; they are the only link between a container and
// the BBS record it runs.
const (
	TagLifecycle     = "lifecycle" // "lrp" or "task"
	TagDomain        = "domain"
	TagProcessGuid   = "process-guid"
	TagProcessIndex  = "process-index"
	TagInstanceGuid  = "instance-guid"
	TagPlacementTags = "placement-tags" // JSON list
	TagVolumeDrivers = "volume-drivers" // JSON list
	TagResultFile    = "result-file"
	TagRootFS        = "rootfs"

	LifecycleLRP  = "lrp"
	LifecycleTask = "task"
)

// Errors of the Client; match with errors.Is.
var (
	ErrContainerGuidNotAvailable = errors.New("container guid not available")
	ErrInsufficientResources     = errors.New("insufficient resources available")
	ErrContainerNotFound         = errors.New("container not found")
	ErrInvalidStateTransition    = errors.New("invalid state transition")
	ErrGuidNotSpecified          = errors.New("container guid not specified")
	ErrLimitsInvalid             = errors.New("container limits invalid")
	ErrStepsInvalid              = errors.New("container steps invalid")
	ErrUnsupportedRootFS         = errors.New("rootfs not supported by this cell")
	ErrFileTooLarge              = errors.New("file too large")
)

// Resources is an amount of cell capacity.
type Resources struct {
	MemoryMB   int `json:"memory_mb"`
	DiskMB     int `json:"disk_mb"`
	Containers int `json:"containers"`
}

// Resource is what one container reserves.
type Resource struct {
	MemoryMB int `json:"memory_mb"`
	DiskMB   int `json:"disk_mb"`
	MaxPids  int `json:"max_pids"`
}

// AllocationRequest reserves resources for a container with the given guid.
type AllocationRequest struct {
	Guid     string
	Resource Resource
	Tags     map[string]string
}

// AllocationFailure is a request that could not be reserved, and why.
type AllocationFailure struct {
	Request AllocationRequest
	Err     error
}

// EnvVar is one NAME=value pair.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RunInfo is everything needed to create and run a container.
type RunInfo struct {
	// RootFS is a URL: preloaded:NAME or docker://ref.
	RootFS     string
	CPUWeight  uint32
	Privileged bool
	// Ports are container ports; each is mapped to a host port.
	Ports []uint32
	// Env is the container env (the LRP's env, plus INSTANCE_* and CF_INSTANCE_GUID/INDEX
	// added by the rep). The run step adds the networking vars (CF_INSTANCE_IP, ...).
	Env                []EnvVar
	CachedDependencies []*modelsv1.CachedDependency
	Setup              *modelsv1.Action
	Action             *modelsv1.Action
	Monitor            *modelsv1.Action
	CheckDefinition    *modelsv1.CheckDefinition
	// StartTimeout bounds the wait for the first passing health check (0 = no bound).
	StartTimeout time.Duration
	EgressRules  []*modelsv1.EgressRule
	// LogGuid and LogIndex tag every log line (source_id / instance_id).
	LogGuid  string
	LogIndex int
	// LogSource is the default source of lines (the DesiredLRP's log_source; "APP" if empty).
	LogSource string
	// ImageUsername and ImagePassword authenticate the pull of a docker:// rootfs. They
	// are secrets: never logged, and not kept in the adoption state.
	ImageUsername string
	ImagePassword string
	// ImageLayers are extra archives extracted into the container before it runs.
	ImageLayers []*modelsv1.ImageLayer
}

// RunRequest turns a reserved container into a running one.
type RunRequest struct {
	Guid    string
	RunInfo RunInfo
	// Tags are merged into the container's tags.
	Tags map[string]string
}

// PortMapping maps a container port to a host port on the cell's address.
type PortMapping struct {
	ContainerPort uint32 `json:"container_port"`
	HostPort      uint32 `json:"host_port"`
}

// NetInfo is how to reach a container.
type NetInfo struct {
	// ExternalIP is the cell's address; host ports are bound there.
	ExternalIP string `json:"external_ip"`
	// InternalIP is the container's own address.
	InternalIP string        `json:"internal_ip"`
	Ports      []PortMapping `json:"ports"`
}

// RunResult is how a container completed.
type RunResult struct {
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	// Retryable failures happened before the workload ran (e.g. a failed download of a
	// cached dependency, a failed container creation).
	Retryable bool `json:"retryable"`
	// Stopped is set when the container completed because Stop or Delete was called.
	Stopped bool `json:"stopped"`
}

// Container is a snapshot of one container.
type Container struct {
	Guid      string
	State     State
	Resource  Resource
	Tags      map[string]string
	RunInfo   *RunInfo // nil until Run
	NetInfo   NetInfo
	RunResult RunResult
	// Routable is false while readiness checks fail.
	Routable    bool
	AllocatedAt time.Time
	// RunningAt is when the container became running (zero before).
	RunningAt time.Time
}

// EventType is the kind of lifecycle event.
type EventType string

// Event types.
const (
	EventReserved  EventType = "reserved"
	EventRunning   EventType = "running"
	EventCompleted EventType = "completed"
)

// Event is a container lifecycle event; Container is the state right after it.
type Event struct {
	Type      EventType
	Container Container
}

// Metrics is one container's usage.
type Metrics struct {
	Guid             string
	CPUTimeNs        uint64
	MemoryBytes      uint64
	MemoryQuotaBytes uint64
	DiskBytes        uint64
	DiskQuotaBytes   uint64
	Pids             uint64
}

// LogLine is one line of output of a container's process (or of the cell about it).
type LogLine struct {
	ContainerGuid string
	Source        string // log_source, "CELL" for lifecycle lines, "HEALTH" for checks
	Stream        string // "stdout" or "stderr"
	Text          string
	Time          time.Time
}

// LogOptions selects what Logs returns.
type LogOptions struct {
	// Tail sends at most this many kept lines (0 = all kept).
	Tail int
	// Follow keeps the channel open and sends new lines until ctx ends or the container
	// is deleted.
	Follow bool
}

// Client is the executor as the rep uses it. It is safe for concurrent use.
type Client interface {
	// Allocate reserves resources; a guid already known or not enough room fails.
	// Each success emits EventReserved.
	Allocate(ctx context.Context, reqs []AllocationRequest) []AllocationFailure
	// Run creates and starts a reserved container; it returns once the run is queued.
	Run(ctx context.Context, req RunRequest) error
	// Stop signals the container's processes (SIGTERM, SIGKILL after the grace period)
	// and completes it with Stopped=true. The container keeps its resources until Delete.
	Stop(ctx context.Context, guid string) error
	// Delete stops the container if needed, destroys it and frees its resources.
	// Deleting an unknown guid returns ErrContainerNotFound.
	Delete(ctx context.Context, guid string) error
	// Get returns one container.
	Get(ctx context.Context, guid string) (Container, error)
	// List returns every container this executor holds.
	List(ctx context.Context) ([]Container, error)
	// Subscribe returns lifecycle events until ctx ends. A subscriber that falls far
	// behind loses events (the rep's periodic sync repairs that).
	Subscribe(ctx context.Context) (<-chan Event, error)
	// Metrics returns the usage of every created container.
	Metrics(ctx context.Context) ([]Metrics, error)
	// Logs returns the kept lines of a container, then (with Follow) new ones. The channel
	// closes when ctx ends, when the kept lines are sent (without Follow), or on delete.
	Logs(ctx context.Context, guid string, opts LogOptions) (<-chan LogLine, error)
	// ReadFile returns the file at path inside the container; a file larger than max
	// bytes fails with ErrFileTooLarge.
	ReadFile(ctx context.Context, guid, path string, max int) ([]byte, error)
	// TotalResources is the cell's capacity.
	TotalResources() Resources
	// RemainingResources is capacity minus every container not yet deleted.
	RemainingResources() Resources
	// RootFSProviders is what this cell can run (for the presence and the State).
	RootFSProviders() []*modelsv1.RootFSProvider
	// Healthy reports whether the container backend works.
	Healthy(ctx context.Context) bool
	// Interactive runs an operator's process (droverctl exec) in a running container;
	// any other state fails with ErrInvalidStateTransition.
	Interactive
}
