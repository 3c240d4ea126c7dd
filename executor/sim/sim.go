// Package sim is an in-memory executor.Runtime: no containers, fake addresses and
// ports, processes that run until signalled (or exit at once when scripted to), files
// kept in memory. It serves the rep's unit tests and scale runs with hundreds of cells,
// so an idle process costs no goroutine.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/internal/fanout"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Config shapes a simulated runtime.
type Config struct {
	// StartLatency is how long Create takes.
	StartLatency time.Duration
	// FailureRate is the probability (0..1) that Create fails with "simulated failure".
	FailureRate float64
	// Seed seeds the failure draws.
	Seed int64
	// PreloadedRootFSes are the NAMEs accepted as preloaded:NAME.
	PreloadedRootFSes []string
	// ArbitrarySchemes are URL schemes accepted with any reference (e.g. "docker").
	ArbitrarySchemes []string
	// ExternalIP is the cell address put into NetInfo (127.0.0.1 if empty).
	ExternalIP string
	// ListLatency is how long List takes after it read the containers (a slow list
	// of a busy containerd: containers created meanwhile are not in it).
	ListLatency time.Duration
}

// FirstHostPort is the first host port handed out.
const FirstHostPort = 61000

// Fixed usage numbers reported for every container.
const (
	UsageCPUTimeNs   = 1_000_000_000
	UsageMemoryBytes = 32 << 20
	UsageDiskBytes   = 16 << 20
	UsagePids        = 3
)

// Runtime is the simulated runtime. It is safe for concurrent use.
type Runtime struct {
	cfg Config
	// lists counts List calls (Lists).
	lists atomic.Int64

	mu         sync.Mutex
	rng        *rand.Rand
	containers map[string]*container
	nextPort   uint32
	nextIP     uint32
	failChecks map[string]bool
	events     fanout.Broker[executor.RuntimeEvent]
}

type container struct {
	spec      executor.ContainerSpec
	net       executor.NetInfo
	createdAt time.Time
	procs     map[string]*process
	files     map[string][]byte
	// interactive are the operator processes (ExecInteractive), oldest first.
	interactive []*interactive
	// oomKills is what List reports as the container's OOM kill count (SetOOMKills).
	oomKills uint64
}

var _ executor.Runtime = (*Runtime)(nil)

// New returns an empty simulated runtime.
func New(cfg Config) *Runtime {
	if cfg.ExternalIP == "" {
		cfg.ExternalIP = "127.0.0.1"
	}
	return &Runtime{
		cfg:        cfg,
		rng:        rand.New(rand.NewSource(cfg.Seed)),
		containers: map[string]*container{},
		nextPort:   FirstHostPort,
		failChecks: map[string]bool{},
	}
}

// CheckRootFS accepts preloaded:NAME for a configured NAME and any URL of an arbitrary scheme.
func (r *Runtime) CheckRootFS(rootfs string) error {
	scheme, rest, ok := strings.Cut(rootfs, ":")
	if !ok {
		return fmt.Errorf("%w: %q has no scheme", executor.ErrUnsupportedRootFS, rootfs)
	}
	if scheme == "preloaded" {
		for _, n := range r.cfg.PreloadedRootFSes {
			if n == rest {
				return nil
			}
		}
		return fmt.Errorf("%w: no preloaded rootfs %q", executor.ErrUnsupportedRootFS, rest)
	}
	for _, s := range r.cfg.ArbitrarySchemes {
		if s == scheme {
			return nil
		}
	}
	return fmt.Errorf("%w: scheme %q", executor.ErrUnsupportedRootFS, scheme)
}

// RootFSProviders lists "preloaded" with its names and each arbitrary scheme.
func (r *Runtime) RootFSProviders() []*modelsv1.RootFSProvider {
	var out []*modelsv1.RootFSProvider
	if len(r.cfg.PreloadedRootFSes) > 0 {
		out = append(out, &modelsv1.RootFSProvider{Name: "preloaded", Properties: append([]string(nil), r.cfg.PreloadedRootFSes...)})
	}
	for _, s := range r.cfg.ArbitrarySchemes {
		out = append(out, &modelsv1.RootFSProvider{Name: s})
	}
	return out
}

// Create waits StartLatency, may fail by FailureRate, and records the container with
// fake addresses.
func (r *Runtime) Create(ctx context.Context, spec executor.ContainerSpec) (executor.NetInfo, error) {
	if spec.Guid == "" {
		return executor.NetInfo{}, executor.ErrGuidNotSpecified
	}
	if r.cfg.StartLatency > 0 {
		t := time.NewTimer(r.cfg.StartLatency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return executor.NetInfo{}, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.FailureRate > 0 && r.rng.Float64() < r.cfg.FailureRate {
		return executor.NetInfo{}, errors.New("simulated failure")
	}
	if _, ok := r.containers[spec.Guid]; ok {
		return executor.NetInfo{}, fmt.Errorf("container %s already exists", spec.Guid)
	}
	r.nextIP++
	net := executor.NetInfo{
		ExternalIP: r.cfg.ExternalIP,
		InternalIP: fmt.Sprintf("10.255.%d.%d", (r.nextIP>>8)&0xff, r.nextIP&0xff),
	}
	seen := map[uint32]bool{}
	for _, p := range spec.Ports {
		if seen[p] {
			continue
		}
		seen[p] = true
		net.Ports = append(net.Ports, executor.PortMapping{ContainerPort: p, HostPort: r.nextPort})
		r.nextPort++
	}
	spec.State = append([]byte(nil), spec.State...)
	r.containers[spec.Guid] = &container{
		spec: spec, net: net, createdAt: time.Now(),
		procs: map[string]*process{}, files: map[string][]byte{},
	}
	return net, nil
}

// get returns a container; r.mu must be held.
func (r *Runtime) get(guid string) (*container, error) {
	c, ok := r.containers[guid]
	if !ok {
		return nil, fmt.Errorf("%w: %s", executor.ErrContainerNotFound, guid)
	}
	return c, nil
}

// Destroy ends every process and forgets the container; unknown guids are fine.
func (r *Runtime) Destroy(ctx context.Context, guid string) error {
	r.mu.Lock()
	c, ok := r.containers[guid]
	delete(r.containers, guid)
	delete(r.failChecks, guid)
	r.mu.Unlock()
	if ok {
		c.killAll()
	}
	return nil
}

func (c *container) killAll() {
	for _, p := range c.procs {
		p.exit(137)
	}
	for _, p := range c.interactive {
		p.exit(137)
	}
}

// List returns every container.
func (r *Runtime) List(ctx context.Context) ([]executor.RuntimeContainer, error) {
	out := r.list()
	r.lists.Add(1)
	if r.cfg.ListLatency > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(r.cfg.ListLatency):
		}
	}
	return out, nil
}

// Lists is how many List calls have read the containers so far.
func (r *Runtime) Lists() int64 { return r.lists.Load() }

// list is the containers now.
func (r *Runtime) list() []executor.RuntimeContainer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]executor.RuntimeContainer, 0, len(r.containers))
	for guid, c := range r.containers {
		out = append(out, executor.RuntimeContainer{
			Guid: guid, Tags: c.spec.Tags, NetInfo: c.net, State: c.spec.State,
			Alive: true, CreatedAt: c.createdAt, OOMKills: c.oomKills,
		})
	}
	return out
}

// Check passes unless FailChecks marked the guid.
func (r *Runtime) Check(ctx context.Context, guid string, check *modelsv1.Check) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.get(guid); err != nil {
		return err
	}
	if r.failChecks[guid] {
		return errors.New("connection refused (simulated)")
	}
	return nil
}

// FailChecks makes every later Check of guid fail (or pass again with false).
func (r *Runtime) FailChecks(guid string, fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failChecks[guid] = fail
}

// Usage returns fixed numbers.
func (r *Runtime) Usage(ctx context.Context, guid string) (executor.Usage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.get(guid); err != nil {
		return executor.Usage{}, err
	}
	return executor.Usage{CPUTimeNs: UsageCPUTimeNs, MemoryBytes: UsageMemoryBytes, DiskBytes: UsageDiskBytes, Pids: UsagePids}, nil
}

// Ping always answers.
func (r *Runtime) Ping(ctx context.Context) error { return nil }

// Events delivers events until ctx ends. Slow readers lose events.
func (r *Runtime) Events(ctx context.Context) <-chan executor.RuntimeEvent {
	return r.events.Subscribe(ctx, 64)
}

// SetOOMKills sets the OOM kill count List reports for guid, as if its memory limit had
// killed n processes (a test hook for kills whose event was missed).
func (r *Runtime) SetOOMKills(guid string, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[guid]; ok {
		c.oomKills = n
	}
}

// Emit delivers an event to every Events reader (a test hook, e.g. for OOM notices).
func (r *Runtime) Emit(ev executor.RuntimeEvent) { r.events.Publish(ev) }

// Kill makes a container vanish behind the executor's back: its processes end with 137,
// it is forgotten and a RuntimeVanished event is emitted.
func (r *Runtime) Kill(guid string) {
	r.mu.Lock()
	c, ok := r.containers[guid]
	delete(r.containers, guid)
	r.mu.Unlock()
	if !ok {
		return
	}
	c.killAll()
	r.Emit(executor.RuntimeEvent{Guid: guid, Kind: executor.RuntimeVanished, Reason: "container vanished (simulated)"})
}

// Count returns the number of containers (a test and benchmark helper).
func (r *Runtime) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.containers)
}

// Spec returns the spec a container was created with (a test helper).
func (r *Runtime) Spec(guid string) (executor.ContainerSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[guid]
	if !ok {
		return executor.ContainerSpec{}, false
	}
	return c.spec, true
}
