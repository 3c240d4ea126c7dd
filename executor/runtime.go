package executor

import (
	"context"
	"io"
	"syscall"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ContainerSpec is what a Runtime needs to create a container.
type ContainerSpec struct {
	Guid       string
	RootFS     string
	Resource   Resource
	CPUWeight  uint32
	Privileged bool
	Ports      []uint32
	// Env is the container env as NAME=value; every process inherits it.
	Env []string
	// Tags are stored on the container (containerd labels) so that a restarted
	// executor can find and describe it.
	Tags       map[string]string
	BindMounts []BindMount
	// State is opaque data the engine needs to adopt the container after a restart
	// (JSON); the runtime stores it with the container and returns it from List.
	State []byte
	// ImageUsername and ImagePassword authenticate the pull of a registry rootfs. They
	// are secrets: never logged, stored or put in an error.
	ImageUsername string
	ImagePassword string
	// EgressRules open the container's network (default deny) on top of the cell's
	// default rules; the last rule takes precedence.
	EgressRules []*modelsv1.EgressRule
}

// BindMount mounts a host directory into the container.
type BindMount struct {
	Source      string
	Destination string
	ReadOnly    bool
}

// ProcessSpec is one process to start in a container.
type ProcessSpec struct {
	// ID names the process inside its container; Reattach finds it again by it.
	ID   string
	Path string
	Args []string
	Dir  string
	// Env is added to the container env (NAME=value; later entries win).
	Env    []string
	User   string
	Nofile uint64
	// Stdout and Stderr receive the output; nil discards it.
	Stdout io.Writer
	Stderr io.Writer
}

// ProcessExit is how a process ended.
type ProcessExit struct {
	Code int
	// OOMKilled is set when the container's memory limit killed it.
	OOMKilled bool
}

// Process is a running process of a container.
type Process interface {
	// ID is the ProcessSpec's ID.
	ID() string
	// Wait blocks until the process exits or ctx ends.
	Wait(ctx context.Context) (ProcessExit, error)
	// Signal sends sig to the process.
	Signal(ctx context.Context, sig syscall.Signal) error
}

// RuntimeContainer is a container a Runtime owns, as found by List.
type RuntimeContainer struct {
	Guid    string
	Tags    map[string]string
	NetInfo NetInfo
	State   []byte
	// Alive is false when the container's init process is gone.
	Alive     bool
	CreatedAt time.Time
	// OOMKills counts the processes the container's memory limit killed since it was
	// created (from its cgroup), so an OOM kill missed while the executor was down, or
	// whose event was lost, is still noticed.
	OOMKills uint64
}

// Usage is a container's resource use.
type Usage struct {
	CPUTimeNs   uint64
	MemoryBytes uint64
	DiskBytes   uint64
	Pids        uint64
}

// RuntimeEventKind is something the backend noticed about a container.
type RuntimeEventKind string

// Runtime event kinds.
const (
	// RuntimeOOM: the memory limit killed a process of the container (any process, not
	// only the main one); the executor crashes the container.
	RuntimeOOM RuntimeEventKind = "oom"
	// RuntimeDiskExceeded: the container wrote more than its disk_mb; the runtime has
	// stopped its processes. Reason says by how much.
	RuntimeDiskExceeded RuntimeEventKind = "disk-exceeded"
	// RuntimeVanished: the container disappeared behind the executor's back.
	RuntimeVanished RuntimeEventKind = "vanished"
)

// RuntimeEvent is delivered by Runtime.Events.
type RuntimeEvent struct {
	Guid   string
	Kind   RuntimeEventKind
	Reason string
}

// Runtime is a container backend: containerd, or the simulated one. All methods are
// safe for concurrent use; guids are unique per runtime.
type Runtime interface {
	// CheckRootFS refuses a rootfs URL this cell cannot run (ErrUnsupportedRootFS).
	CheckRootFS(rootfs string) error
	// RootFSProviders is what this cell can run.
	RootFSProviders() []*modelsv1.RootFSProvider
	// Create makes the container (rootfs, limits, network with every port mapped to a
	// host port, env) and starts its long-lived init process. On error nothing is left.
	Create(ctx context.Context, spec ContainerSpec) (NetInfo, error)
	// Exec starts a process in a created container.
	Exec(ctx context.Context, guid string, spec ProcessSpec) (Process, error)
	// Interactive starts an operator's process (droverctl exec) in a created container.
	Interactive
	// Reattach finds a process started by an earlier executor (same ID) and streams its
	// further output to stdout/stderr.
	Reattach(ctx context.Context, guid, processID string, stdout, stderr io.Writer) (Process, error)
	// StreamIn extracts a tar stream into dir inside the container, owned by user.
	StreamIn(ctx context.Context, guid, dir, user string, tarStream io.Reader) error
	// StreamOut returns a tar stream of path inside the container.
	StreamOut(ctx context.Context, guid, path string) (io.ReadCloser, error)
	// Check runs one health check against the container (TCP connect or HTTP GET on its
	// address) and returns nil when it passes.
	Check(ctx context.Context, guid string, check *modelsv1.Check) error
	// Usage reads the container's cgroup and disk usage.
	Usage(ctx context.Context, guid string) (Usage, error)
	// Destroy kills every process and removes the container and everything made for it
	// (task, snapshot, netns, veth, firewall rules, port reservations, mounts). It is
	// idempotent: destroying an unknown guid returns nil.
	Destroy(ctx context.Context, guid string) error
	// List returns the containers this runtime owns, including ones made before a restart.
	List(ctx context.Context) ([]RuntimeContainer, error)
	// Events delivers OOM, disk and vanish notices until ctx ends.
	Events(ctx context.Context) <-chan RuntimeEvent
	// Ping reports whether the backend answers.
	Ping(ctx context.Context) error
}
