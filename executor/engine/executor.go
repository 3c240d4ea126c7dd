package engine

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/internal/fanout"
	"drover.dev/executor/logbuf"
	"drover.dev/executor/steps"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// CellSource is the log source of the executor's own lifecycle lines.
const CellSource = "CELL"

// Executor implements executor.Client on a Runtime. Start its loops with Run.
type Executor struct {
	cfg     Config
	rt      executor.Runtime
	dl      Downloader
	logger  *slog.Logger
	started time.Time
	// detached is closed when Loop returns: run goroutines then leave processes alone.
	detached     chan struct{}
	detachedOnce sync.Once

	downloadSlots chan struct{}
	uploadSlots   chan struct{}

	mu     sync.Mutex
	nodes  map[string]*node
	events fanout.Broker[executor.Event]
}

// node is one container in the store.
type node struct {
	c    executor.Container
	logs *logbuf.Buffer
	// created is set once the runtime container exists, at createdAt (zero for a
	// container adopted at start).
	created   bool
	createdAt time.Time
	// cancel stops the run goroutine; nil before Run.
	cancel context.CancelFunc
	// done is closed when the run goroutine ends; nil before Run.
	done chan struct{}
	// stopResult, once set, is how the container completes (stop, disk, vanish).
	stopResult *executor.RunResult
	oom        atomic.Bool
}

var _ executor.Client = (*Executor)(nil)

// New returns an executor on rt. dl may be nil (downloads then fail).
func New(cfg Config, rt executor.Runtime, dl Downloader, logger *slog.Logger) *Executor {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{
		cfg: cfg, rt: rt, dl: dl, logger: logger, started: time.Now(), detached: make(chan struct{}),
		downloadSlots: make(chan struct{}, cfg.MaxConcurrentDownloads),
		uploadSlots:   make(chan struct{}, cfg.MaxConcurrentUploads),
		nodes:         map[string]*node{},
	}
}

// snapshot copies a node's container so callers cannot touch the store.
func (n *node) snapshot() executor.Container {
	c := n.c
	c.Tags = maps.Clone(n.c.Tags)
	if n.c.RunInfo != nil {
		ri := *n.c.RunInfo
		c.RunInfo = &ri
	}
	return c
}

// cellLog appends a lifecycle line to the container's log.
func (n *node) cellLog(format string, args ...any) {
	n.logs.Append(executor.LogLine{
		ContainerGuid: n.c.Guid, Source: CellSource, Stream: logbuf.Stdout,
		Text: fmt.Sprintf(format, args...), Time: time.Now(),
	})
}

// emitLocked sends an event to every subscriber without blocking. e.mu must be held.
func (e *Executor) emitLocked(t executor.EventType, n *node) {
	if missed := e.events.Publish(executor.Event{Type: t, Container: n.snapshot()}); missed > 0 {
		e.logger.Warn("event-subscriber-lagging", "guid", n.c.Guid, "type", string(t), "subscribers", missed)
	}
}

// usedLocked sums the resources of every container in the store. e.mu must be held.
func (e *Executor) usedLocked() executor.Resources {
	var used executor.Resources
	for _, n := range e.nodes {
		used.MemoryMB += n.c.Resource.MemoryMB
		used.DiskMB += n.c.Resource.DiskMB
		used.Containers++
	}
	return used
}

func (e *Executor) remainingLocked() executor.Resources {
	used := e.usedLocked()
	total := e.cfg.Capacity
	return executor.Resources{
		MemoryMB:   total.MemoryMB - used.MemoryMB,
		DiskMB:     total.DiskMB - used.DiskMB,
		Containers: total.Containers - used.Containers,
	}
}

// fits reports whether r fits in what remains.
func fits(remaining executor.Resources, r executor.Resource) bool {
	return remaining.Containers >= 1 && remaining.MemoryMB >= r.MemoryMB && remaining.DiskMB >= r.DiskMB
}

// validateAllocation checks a request before it touches the store.
func validateAllocation(req executor.AllocationRequest) error {
	if req.Guid == "" {
		return executor.ErrGuidNotSpecified
	}
	r := req.Resource
	if r.MemoryMB < 0 || r.DiskMB < 0 || r.MaxPids < 0 {
		return fmt.Errorf("%w: memory_mb, disk_mb and max_pids must not be negative", executor.ErrLimitsInvalid)
	}
	return nil
}

// Allocate reserves resources for each request; the failures say why.
func (e *Executor) Allocate(ctx context.Context, reqs []executor.AllocationRequest) []executor.AllocationFailure {
	var failures []executor.AllocationFailure
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, req := range reqs {
		if err := validateAllocation(req); err != nil {
			failures = append(failures, executor.AllocationFailure{Request: req, Err: err})
			continue
		}
		if _, ok := e.nodes[req.Guid]; ok {
			failures = append(failures, executor.AllocationFailure{Request: req, Err: executor.ErrContainerGuidNotAvailable})
			continue
		}
		if !fits(e.remainingLocked(), req.Resource) {
			failures = append(failures, executor.AllocationFailure{Request: req, Err: executor.ErrInsufficientResources})
			continue
		}
		n := &node{
			c: executor.Container{
				Guid: req.Guid, State: executor.StateReserved, Resource: req.Resource,
				Tags: maps.Clone(req.Tags), AllocatedAt: time.Now(),
			},
			logs: logbuf.New(e.cfg.LogLinesPerContainer),
		}
		e.nodes[req.Guid] = n
		e.emitLocked(executor.EventReserved, n)
	}
	return failures
}

// validateRunInfo builds every tree once to refuse bad ones before anything runs.
func validateRunInfo(ri executor.RunInfo) error {
	if ri.Action == nil {
		return fmt.Errorf("%w: action is required", executor.ErrStepsInvalid)
	}
	deps := &steps.Deps{}
	for name, a := range map[string]*modelsv1.Action{"setup": ri.Setup, "action": ri.Action, "monitor": ri.Monitor} {
		if a == nil {
			continue
		}
		if _, err := steps.Build(a, deps, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(ri.CheckDefinition.GetChecks()) > 0 {
		if _, _, err := steps.CheckDefinitionHealth(nil, "", ri.CheckDefinition); err != nil {
			return err
		}
	}
	return nil
}

// Run moves a reserved container to initializing and starts creating and running it
// in the background.
func (e *Executor) Run(ctx context.Context, req executor.RunRequest) error {
	if req.Guid == "" {
		return executor.ErrGuidNotSpecified
	}
	if err := validateRunInfo(req.RunInfo); err != nil {
		return err
	}
	if err := e.rt.CheckRootFS(req.RunInfo.RootFS); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[req.Guid]
	if !ok {
		return executor.ErrContainerNotFound
	}
	if n.c.State != executor.StateReserved {
		return fmt.Errorf("%w: %s is %s, not reserved", executor.ErrInvalidStateTransition, req.Guid, n.c.State)
	}
	ri := req.RunInfo
	n.c.RunInfo = &ri
	if n.c.Tags == nil && len(req.Tags) > 0 {
		n.c.Tags = map[string]string{}
	}
	maps.Copy(n.c.Tags, req.Tags)
	n.c.State = executor.StateInitializing
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go e.create(runCtx, n)
	return nil
}

// stopLocked records how the container completes and stops its run; a container that
// never ran completes at once. e.mu must be held.
func (e *Executor) stopLocked(n *node, result executor.RunResult) {
	if n.c.State == executor.StateCompleted {
		return
	}
	if n.stopResult == nil {
		n.stopResult = &result
		if result.Stopped {
			n.cellLog("Cell %s stopping instance %s", e.cfg.CellID, n.c.Guid)
		}
	}
	if n.cancel == nil {
		e.completeLocked(n, *n.stopResult)
		return
	}
	n.cancel()
}

// Stop signals the container's processes and completes it with Stopped=true.
func (e *Executor) Stop(ctx context.Context, guid string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[guid]
	if !ok {
		return executor.ErrContainerNotFound
	}
	e.stopLocked(n, executor.RunResult{Stopped: true})
	return nil
}

// Delete stops the container, waits for its processes (bounded by ctx), destroys it
// and frees its resources.
func (e *Executor) Delete(ctx context.Context, guid string) error {
	e.mu.Lock()
	n, ok := e.nodes[guid]
	if !ok {
		e.mu.Unlock()
		return executor.ErrContainerNotFound
	}
	e.stopLocked(n, executor.RunResult{Stopped: true})
	done := n.done
	e.mu.Unlock()

	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			e.logger.Warn("delete-did-not-wait-for-processes", "guid", guid, "error", ctx.Err())
		}
	}
	n.cellLog("Cell %s destroying container for instance %s", e.cfg.CellID, guid)
	if err := e.rt.Destroy(context.WithoutCancel(ctx), guid); err != nil {
		e.logger.Error("destroy-failed", "guid", guid, "error", err)
		return fmt.Errorf("destroying container %s: %w", guid, err)
	}
	n.cellLog("Cell %s successfully destroyed container for instance %s", e.cfg.CellID, guid)
	e.mu.Lock()
	delete(e.nodes, guid)
	e.mu.Unlock()
	n.logs.Close()
	return nil
}

// Get returns one container.
func (e *Executor) Get(ctx context.Context, guid string) (executor.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[guid]
	if !ok {
		return executor.Container{}, executor.ErrContainerNotFound
	}
	return n.snapshot(), nil
}

// List returns every container.
func (e *Executor) List(ctx context.Context) ([]executor.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]executor.Container, 0, len(e.nodes))
	for _, n := range e.nodes {
		out = append(out, n.snapshot())
	}
	return out, nil
}

// Subscribe returns lifecycle events until ctx ends.
func (e *Executor) Subscribe(ctx context.Context) (<-chan executor.Event, error) {
	return e.events.Subscribe(ctx, 1024), nil
}

// Metrics returns the usage of every container whose runtime container exists.
func (e *Executor) Metrics(ctx context.Context) ([]executor.Metrics, error) {
	e.mu.Lock()
	var created []executor.Container
	for _, n := range e.nodes {
		if n.created {
			created = append(created, n.c)
		}
	}
	e.mu.Unlock()
	out := make([]executor.Metrics, 0, len(created))
	for _, c := range created {
		u, err := e.rt.Usage(ctx, c.Guid)
		if err != nil {
			e.logger.Debug("usage-failed", "guid", c.Guid, "error", err)
			continue
		}
		out = append(out, executor.Metrics{
			Guid: c.Guid, CPUTimeNs: u.CPUTimeNs, MemoryBytes: u.MemoryBytes, DiskBytes: u.DiskBytes, Pids: u.Pids,
			MemoryQuotaBytes: uint64(c.Resource.MemoryMB) << 20, DiskQuotaBytes: uint64(c.Resource.DiskMB) << 20,
		})
	}
	return out, nil
}

// Logs streams a container's kept lines and, with Follow, new ones.
func (e *Executor) Logs(ctx context.Context, guid string, opts executor.LogOptions) (<-chan executor.LogLine, error) {
	e.mu.Lock()
	n, ok := e.nodes[guid]
	e.mu.Unlock()
	if !ok {
		return nil, executor.ErrContainerNotFound
	}
	return n.logs.Subscribe(ctx, opts.Tail, opts.Follow), nil
}

// ReadFile returns the first file of the tar stream of path in the container.
func (e *Executor) ReadFile(ctx context.Context, guid, path string, max int) ([]byte, error) {
	e.mu.Lock()
	n, ok := e.nodes[guid]
	created := ok && n.created
	e.mu.Unlock()
	if !ok {
		return nil, executor.ErrContainerNotFound
	}
	if !created {
		return nil, fmt.Errorf("%w: container %s was never created", executor.ErrInvalidStateTransition, guid)
	}
	rc, err := e.rt.StreamOut(ctx, guid, path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if h.Size > int64(max) {
		return nil, fmt.Errorf("%w: %s is %d bytes, max %d", executor.ErrFileTooLarge, path, h.Size, max)
	}
	data, err := io.ReadAll(io.LimitReader(tr, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", executor.ErrFileTooLarge, path, max)
	}
	return data, nil
}

// TotalResources is the cell's capacity.
func (e *Executor) TotalResources() executor.Resources { return e.cfg.Capacity }

// RemainingResources is capacity minus every container not yet deleted.
func (e *Executor) RemainingResources() executor.Resources {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.remainingLocked()
}

// RootFSProviders is what the runtime can run.
func (e *Executor) RootFSProviders() []*modelsv1.RootFSProvider { return e.rt.RootFSProviders() }

// Healthy reports whether the runtime answers.
func (e *Executor) Healthy(ctx context.Context) bool { return e.rt.Ping(ctx) == nil }
