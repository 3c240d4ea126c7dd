package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/firewall"
	"drover.dev/executor/internal/fanout"
	"drover.dev/executor/internal/keyedmutex"
	"drover.dev/executor/network"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"golang.org/x/sync/singleflight"
)

// Runtime is executor.Runtime on containerd.
type Runtime struct {
	cfg           Config
	logger        *slog.Logger
	client        *containerd.Client
	net           *network.Manager
	fw            *firewall.Firewall
	state         stateDir
	swapSupported bool
	// diskByPolling skips filesystem quotas, so that the disk poll enforces disk_mb (set
	// by tests of the polling path on a filesystem with quotas).
	diskByPolling bool

	// ctx is namespaced and lives until Close; background work and waits use it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// imageMu serialises imports of preloaded images.
	imageMu sync.Mutex
	// pulls coalesces resolves and pulls of one image.
	pulls singleflight.Group
	// remaps coalesces makings of one remapped snapshot (remap.go).
	remaps   singleflight.Group
	registry *registryClient
	gcMu     sync.Mutex
	gc       imageGC
	locks    keyedmutex.Mutex
	events   fanout.Broker[executor.RuntimeEvent]

	mu sync.Mutex
	// destroying holds guids being (or recently) destroyed: their exits are no vanish.
	destroying map[string]bool
	// diskExceeded holds guids already stopped for their disk quota.
	diskExceeded map[string]bool
	// diskUsage is the last measured upper dir size per guid.
	diskUsage map[string]uint64
}

var _ executor.Runtime = (*Runtime)(nil)

// New connects to containerd, prepares the state dir and the network, removes leftovers
// of containers that no longer exist, and starts watching events and disk usage.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Runtime, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("containerd runtime config: %w", err)
	}
	if _, err := os.Stat(cfg.BusyboxPath); err != nil {
		return nil, fmt.Errorf("busybox_path: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, "containers"), 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	client, err := containerd.New(cfg.Socket, containerd.WithDefaultNamespace(cfg.Namespace),
		containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", cfg.Socket, err)
	}
	nsCtx := namespaces.WithNamespace(ctx, cfg.Namespace)
	if _, err := client.Version(nsCtx); err != nil {
		client.Close()
		return nil, fmt.Errorf("containerd at %s does not answer: %w", cfg.Socket, err)
	}
	registry, err := newRegistryClient(cfg.Registry)
	if err != nil {
		client.Close()
		return nil, err
	}
	netMgr, err := network.New(cfg.Network, logger)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("network: %w", err)
	}
	fw, err := firewall.New(firewall.Config{
		Table:        firewall.TableName(cfg.Namespace),
		Bridge:       cfg.Network.BridgeName,
		StateDir:     filepath.Join(cfg.StateDir, "firewall"),
		DefaultRules: cfg.DefaultEgressRules,
	}, logger)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("egress firewall: %w", err)
	}
	runCtx, cancel := context.WithCancel(namespaces.WithNamespace(context.Background(), cfg.Namespace))
	r := &Runtime{
		cfg:           cfg,
		logger:        logger,
		client:        client,
		net:           netMgr,
		fw:            fw,
		registry:      registry,
		gc:            imageGC{inUse: map[string]int{}, unusedSince: map[string]time.Time{}},
		state:         stateDir(cfg.StateDir),
		swapSupported: swapSupported(),
		ctx:           runCtx,
		cancel:        cancel,
		destroying:    map[string]bool{},
		diskExceeded:  map[string]bool{},
		diskUsage:     map[string]uint64{},
	}
	if err := r.removeLeftovers(nsCtx); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.scheduleUnusedImages(); err != nil {
		r.Close()
		return nil, err
	}
	r.wg.Add(2)
	go r.watchEvents()
	go r.pollDisk()
	return r, nil
}

// Close stops the runtime's background work and disconnects. Containers and their
// processes keep running.
func (r *Runtime) Close() error {
	r.gcMu.Lock()
	r.gc.closed = true
	r.gcMu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.registry.Close()
	return r.client.Close()
}

// swapSupported reports whether the memory+swap limit can be set (cgroup v1 with swap
// accounting, or cgroup v2).
func swapSupported() bool {
	for _, p := range []string{"/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "/sys/fs/cgroup/cgroup.controllers"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// removeLeftovers drops state dirs and network attachments of containers that are gone
// (e.g. a rep died in the middle of a Destroy).
func (r *Runtime) removeLeftovers(ctx context.Context) error {
	owned, err := r.ownedGuids(ctx)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(r.cfg.StateDir, "containers"))
	if err != nil {
		return fmt.Errorf("read state dir: %w", err)
	}
	for _, e := range entries {
		if !owned[e.Name()] {
			r.logger.Info("removing-leftover-container-state", "guid", e.Name())
			if err := os.RemoveAll(filepath.Join(r.cfg.StateDir, "containers", e.Name())); err != nil {
				return fmt.Errorf("remove leftover state of %s: %w", e.Name(), err)
			}
		}
	}
	if err := r.net.Prune(ctx, func(guid string) bool { return owned[guid] }); err != nil {
		return fmt.Errorf("prune network leftovers: %w", err)
	}
	if err := r.restoreFirewall(owned); err != nil {
		return fmt.Errorf("restore egress firewall: %w", err)
	}
	return nil
}

// ownedGuids lists the ids of the containers labelled with this runtime's owner label.
func (r *Runtime) ownedGuids(ctx context.Context) (map[string]bool, error) {
	ctrs, err := r.client.Containers(ctx, ownerFilter(r.cfg.Namespace))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	owned := make(map[string]bool, len(ctrs))
	for _, c := range ctrs {
		owned[c.ID()] = true
	}
	return owned, nil
}

func ownerFilter(namespace string) string {
	return fmt.Sprintf("labels.%q==%q", ownerLabel, namespace)
}

// Ping asks containerd for its version.
func (r *Runtime) Ping(ctx context.Context) error {
	_, err := r.client.Version(r.nsCtx(ctx))
	return err
}

// CheckRootFS refuses rootfs URLs this cell cannot run.
func (r *Runtime) CheckRootFS(rootfs string) error {
	_, err := parseRootFS(rootfs, r.cfg.PreloadedRootFSes, r.cfg.ArbitrarySchemes, r.cfg.Registry.Default)
	return err
}

// RootFSProviders is "preloaded" with the configured names, then each arbitrary scheme.
func (r *Runtime) RootFSProviders() []*modelsv1.RootFSProvider {
	names := make([]string, 0, len(r.cfg.PreloadedRootFSes))
	for n := range r.cfg.PreloadedRootFSes {
		names = append(names, n)
	}
	sort.Strings(names)
	providers := []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: names}}
	for _, s := range r.cfg.ArbitrarySchemes {
		providers = append(providers, &modelsv1.RootFSProvider{Name: s})
	}
	return providers
}

// List returns the containers of the runtime's namespace. The namespace is the
// runtime's own, so a container in it without the owner label (made by hand, or by
// another tool) is listed too, with no tags and no state: the engine, which knows no
// such guid, destroys it at start-up and on its reap interval.
func (r *Runtime) List(ctx context.Context) ([]executor.RuntimeContainer, error) {
	ctx = r.nsCtx(ctx)
	ctrs, err := r.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]executor.RuntimeContainer, 0, len(ctrs))
	for _, c := range ctrs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		rc := executor.RuntimeContainer{
			Guid:      c.ID(),
			Tags:      tagsFromLabels(info.Labels),
			CreatedAt: info.CreatedAt,
		}
		if task, alive := r.initAlive(ctx, c); alive {
			rc.Alive = true
			rc.OOMKills = r.oomKills(ctx, c.ID(), task)
		}
		if meta, ok, err := r.state.readContainerMeta(c.ID()); err == nil && ok {
			rc.NetInfo = meta.NetInfo
		}
		state, err := os.ReadFile(r.state.engineState(c.ID()))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read state of %s: %w", c.ID(), err)
		}
		rc.State = state
		out = append(out, rc)
	}
	return out, nil
}

// initAlive returns the container's task and whether its init runs.
func (r *Runtime) initAlive(ctx context.Context, c containerd.Container) (containerd.Task, bool) {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, false
	}
	st, err := task.Status(ctx)
	return task, err == nil && (st.Status == containerd.Running || st.Status == containerd.Paused)
}

// nsCtx puts the runtime's namespace on ctx.
func (r *Runtime) nsCtx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// cleanupCtx is a context for cleanup that must run even when ctx was cancelled.
func (r *Runtime) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.nsCtx(context.WithoutCancel(ctx)), time.Minute)
}

// loadTask returns the container's task.
func (r *Runtime) loadTask(ctx context.Context, guid string) (containerd.Container, containerd.Task, error) {
	c, err := r.client.LoadContainer(ctx, guid)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", executor.ErrContainerNotFound, guid, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("container %s has no running init: %w", guid, err)
	}
	return c, task, nil
}

func (r *Runtime) markDestroying(guid string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.destroying[guid] = true
		return
	}
	delete(r.diskExceeded, guid)
	delete(r.diskUsage, guid)
	// Keep the mark a while: the init's exit event may arrive after Destroy returns.
	time.AfterFunc(time.Minute, func() {
		r.mu.Lock()
		delete(r.destroying, guid)
		r.mu.Unlock()
	})
}

func (r *Runtime) isDestroying(guid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.destroying[guid]
}
