// Package fakeexec is an in-memory executor.Client for the rep's unit tests: it keeps
// containers in a map, records calls, and lets a test set states, files and logs.
package fakeexec

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"drover.dev/executor"
	"drover.dev/executor/sim"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Client is the fake executor.
type Client struct {
	mu         sync.Mutex
	containers map[string]executor.Container
	total      executor.Resources
	providers  []*modelsv1.RootFSProvider
	unhealthy  bool
	runErr     error
	files      map[string][]byte
	logs       map[string][]executor.LogLine
	follow     map[string]chan executor.LogLine
	calls      []string
	runs       []executor.RunRequest
	subs       []chan executor.Event
	sim        *sim.Runtime
}

var _ executor.Client = (*Client)(nil)

// New makes a fake with the given capacity and rootfs providers.
func New(total executor.Resources, providers ...*modelsv1.RootFSProvider) *Client {
	return &Client{
		containers: map[string]executor.Container{},
		total:      total,
		providers:  providers,
		files:      map[string][]byte{},
		logs:       map[string][]executor.LogLine{},
		follow:     map[string]chan executor.LogLine{},
		sim:        sim.New(sim.Config{}),
	}
}

// Put adds or replaces a container.
func (c *Client) Put(ct executor.Container) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.containers[ct.Guid] = ct
}

// SetUnhealthy makes Healthy report false.
func (c *Client) SetUnhealthy(v bool) { c.mu.Lock(); c.unhealthy = v; c.mu.Unlock() }

// SetRunError makes Run fail.
func (c *Client) SetRunError(err error) { c.mu.Lock(); c.runErr = err; c.mu.Unlock() }

// SetFile sets a file ReadFile returns.
func (c *Client) SetFile(guid, path string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[guid+":"+path] = data
}

// SetLogs sets the kept lines of a container.
func (c *Client) SetLogs(guid string, lines ...executor.LogLine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs[guid] = lines
}

// FollowChannel returns the channel that feeds a container's followed lines (made on
// first use); closing it ends the follow.
func (c *Client) FollowChannel(guid string) chan executor.LogLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.follow[guid] == nil {
		c.follow[guid] = make(chan executor.LogLine, 16)
	}
	return c.follow[guid]
}

// Calls returns the recorded mutating calls ("allocate G", "run G", "stop G", "delete G").
func (c *Client) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// Runs returns the recorded run requests.
func (c *Client) Runs() []executor.RunRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]executor.RunRequest(nil), c.runs...)
}

// Emit sends an event to every subscriber.
func (c *Client) Emit(ev executor.Event) {
	c.mu.Lock()
	subs := append([]chan executor.Event(nil), c.subs...)
	c.mu.Unlock()
	for _, s := range subs {
		s <- ev
	}
}

// Allocate reserves containers while memory, disk and container slots last.
func (c *Client) Allocate(_ context.Context, reqs []executor.AllocationRequest) []executor.AllocationFailure {
	c.mu.Lock()
	defer c.mu.Unlock()
	var failures []executor.AllocationFailure
	for _, r := range reqs {
		left := c.remainingLocked()
		switch {
		case r.Guid == "":
			failures = append(failures, executor.AllocationFailure{Request: r, Err: executor.ErrGuidNotSpecified})
		case c.containers[r.Guid].Guid != "":
			failures = append(failures, executor.AllocationFailure{Request: r, Err: executor.ErrContainerGuidNotAvailable})
		case r.Resource.MemoryMB > left.MemoryMB || r.Resource.DiskMB > left.DiskMB || left.Containers < 1:
			failures = append(failures, executor.AllocationFailure{Request: r, Err: executor.ErrInsufficientResources})
		default:
			c.containers[r.Guid] = executor.Container{Guid: r.Guid, State: executor.StateReserved, Resource: r.Resource, Tags: maps.Clone(r.Tags)}
			c.calls = append(c.calls, "allocate "+r.Guid)
		}
	}
	return failures
}

// Run records the request and moves the container to initializing.
func (c *Client) Run(_ context.Context, req executor.RunRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runErr != nil {
		return c.runErr
	}
	ct, ok := c.containers[req.Guid]
	if !ok {
		return executor.ErrContainerNotFound
	}
	if ct.State != executor.StateReserved {
		return executor.ErrInvalidStateTransition
	}
	ct.State = executor.StateInitializing
	info := req.RunInfo
	ct.RunInfo = &info
	for k, v := range req.Tags {
		ct.Tags[k] = v
	}
	c.containers[req.Guid] = ct
	c.calls = append(c.calls, "run "+req.Guid)
	c.runs = append(c.runs, req)
	return nil
}

// Stop completes the container with Stopped=true.
func (c *Client) Stop(_ context.Context, guid string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.containers[guid]
	if !ok {
		return executor.ErrContainerNotFound
	}
	ct.State = executor.StateCompleted
	ct.RunResult = executor.RunResult{Stopped: true}
	c.containers[guid] = ct
	c.calls = append(c.calls, "stop "+guid)
	return nil
}

// Delete forgets the container.
func (c *Client) Delete(_ context.Context, guid string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.containers[guid]; !ok {
		return executor.ErrContainerNotFound
	}
	delete(c.containers, guid)
	c.calls = append(c.calls, "delete "+guid)
	if ch := c.follow[guid]; ch != nil {
		close(ch)
		delete(c.follow, guid)
	}
	return nil
}

// Get returns one container.
func (c *Client) Get(_ context.Context, guid string) (executor.Container, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.containers[guid]
	if !ok {
		return executor.Container{}, executor.ErrContainerNotFound
	}
	return ct, nil
}

// List returns every container sorted by guid.
func (c *Client) List(context.Context) ([]executor.Container, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]executor.Container, 0, len(c.containers))
	for _, ct := range c.containers {
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Guid < out[j].Guid })
	return out, nil
}

// Subscribe returns a channel fed by Emit until ctx ends.
func (c *Client) Subscribe(ctx context.Context) (<-chan executor.Event, error) {
	ch := make(chan executor.Event, 16)
	c.mu.Lock()
	c.subs = append(c.subs, ch)
	c.mu.Unlock()
	out := make(chan executor.Event)
	go func() {
		defer close(out)
		for {
			select {
			case ev := <-ch:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Metrics reports fixed usage for every container.
func (c *Client) Metrics(context.Context) ([]executor.Metrics, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []executor.Metrics
	for guid, ct := range c.containers {
		out = append(out, executor.Metrics{Guid: guid, MemoryBytes: 1 << 20, MemoryQuotaBytes: uint64(ct.Resource.MemoryMB) << 20, CPUTimeNs: 42})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Guid < out[j].Guid })
	return out, nil
}

// Logs sends the kept lines (the last Tail), then, with Follow, what FollowChannel feeds.
func (c *Client) Logs(ctx context.Context, guid string, opts executor.LogOptions) (<-chan executor.LogLine, error) {
	c.mu.Lock()
	if _, ok := c.containers[guid]; !ok {
		c.mu.Unlock()
		return nil, executor.ErrContainerNotFound
	}
	kept := c.logs[guid]
	c.mu.Unlock()
	if opts.Tail > 0 && len(kept) > opts.Tail {
		kept = kept[len(kept)-opts.Tail:]
	}
	var follow chan executor.LogLine
	if opts.Follow {
		follow = c.FollowChannel(guid)
	}
	out := make(chan executor.LogLine)
	go func() {
		defer close(out)
		for _, l := range kept {
			select {
			case out <- l:
			case <-ctx.Done():
				return
			}
		}
		if follow == nil {
			return
		}
		for {
			select {
			case l, ok := <-follow:
				if !ok {
					return
				}
				select {
				case out <- l:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// AppendCellLog adds a CELL line to a container's kept log (the rep's own lines).
func (c *Client) AppendCellLog(_ context.Context, guid, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.containers[guid]; !ok {
		return executor.ErrContainerNotFound
	}
	c.logs[guid] = append(c.logs[guid], executor.LogLine{ContainerGuid: guid, Source: "CELL", Stream: "stdout", Text: text})
	return nil
}

// LogTexts returns the text of a container's kept lines, also after it was deleted.
func (c *Client) LogTexts(guid string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.logs[guid] {
		out = append(out, l.Text)
	}
	return out
}

// ReadFile returns a file set with SetFile.
func (c *Client) ReadFile(_ context.Context, guid, path string, max int) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, ok := c.files[guid+":"+path]
	if !ok {
		return nil, fmt.Errorf("%s: no such file", path)
	}
	if len(data) > max {
		return nil, executor.ErrFileTooLarge
	}
	return data, nil
}

// TotalResources is the capacity.
func (c *Client) TotalResources() executor.Resources { return c.total }

// RemainingResources is the capacity minus every container.
func (c *Client) RemainingResources() executor.Resources {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remainingLocked()
}

func (c *Client) remainingLocked() executor.Resources {
	r := c.total
	for _, ct := range c.containers {
		r.MemoryMB -= ct.Resource.MemoryMB
		r.DiskMB -= ct.Resource.DiskMB
		r.Containers--
	}
	return r
}

// RootFSProviders returns the providers given to New.
func (c *Client) RootFSProviders() []*modelsv1.RootFSProvider { return c.providers }

// Healthy is false after SetUnhealthy(true).
func (c *Client) Healthy(context.Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.unhealthy
}

// ExecInteractive runs a simulated operator process (executor/sim) in a running
// container; Sim shows what ran.
func (c *Client) ExecInteractive(ctx context.Context, guid string, spec executor.InteractiveSpec) (executor.InteractiveProcess, error) {
	c.mu.Lock()
	ct, ok := c.containers[guid]
	c.calls = append(c.calls, "exec:"+guid)
	c.mu.Unlock()
	if !ok {
		return nil, executor.ErrContainerNotFound
	}
	if ct.State != executor.StateRunning {
		return nil, fmt.Errorf("%w: container %s is %s", executor.ErrInvalidStateTransition, guid, ct.State)
	}
	if _, err := c.sim.Create(ctx, executor.ContainerSpec{Guid: guid}); err != nil && !strings.Contains(err.Error(), "already exists") {
		return nil, err
	}
	return c.sim.ExecInteractive(ctx, guid, spec)
}

// Sim is the simulated runtime ExecInteractive runs in.
func (c *Client) Sim() *sim.Runtime { return c.sim }
