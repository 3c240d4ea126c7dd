package containerd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"drover.dev/executor"
	"github.com/containerd/cgroups/v3/cgroup1/stats"
	v2stats "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/containerd"
	"github.com/containerd/typeurl/v2"
)

// cgroupUsage is what the runtime reads from a container's cgroup.
type cgroupUsage struct {
	CPUTimeNs   uint64
	MemoryBytes uint64
	Pids        uint64
	// OOMKills counts processes the memory limit killed; known reports whether the
	// kernel told (cgroup v1 oom_control or v2 memory.events).
	OOMKills      uint64
	OOMKillsKnown bool
}

// taskUsage decodes the task's cgroup metrics (v1 or v2).
func taskUsage(ctx context.Context, task containerd.Task) (cgroupUsage, error) {
	m, err := task.Metrics(ctx)
	if err != nil {
		return cgroupUsage{}, fmt.Errorf("task metrics: %w", err)
	}
	data, err := typeurl.UnmarshalAny(m.Data)
	if err != nil {
		return cgroupUsage{}, fmt.Errorf("decode task metrics: %w", err)
	}
	var u cgroupUsage
	switch s := data.(type) {
	case *stats.Metrics:
		if s.CPU != nil && s.CPU.Usage != nil {
			u.CPUTimeNs = s.CPU.Usage.Total
		}
		if s.Memory != nil && s.Memory.Usage != nil {
			u.MemoryBytes = workingSet(s.Memory.Usage.Usage, s.Memory.TotalInactiveFile)
		}
		if s.Pids != nil {
			u.Pids = s.Pids.Current
		}
		if s.MemoryOomControl != nil {
			u.OOMKills, u.OOMKillsKnown = s.MemoryOomControl.OomKill, true
		}
	case *v2stats.Metrics:
		if s.CPU != nil {
			u.CPUTimeNs = s.CPU.UsageUsec * 1000
		}
		if s.Memory != nil {
			u.MemoryBytes = workingSet(s.Memory.Usage, s.Memory.InactiveFile)
		}
		if s.Pids != nil {
			u.Pids = s.Pids.Current
		}
		if s.MemoryEvents != nil {
			u.OOMKills, u.OOMKillsKnown = s.MemoryEvents.OomKill, true
		}
	default:
		return cgroupUsage{}, fmt.Errorf("unknown task metrics type %T", data)
	}
	return u, nil
}

// workingSet is memory usage without inactive page cache (what the kernel can drop).
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

// oomKills counts the container's OOM kills from its metrics, falling back to the
// cgroup's own file: memory.oom_control on cgroup v1, memory.events on v2 (containerd's
// default cgroup path, /NAMESPACE/GUID).
func (r *Runtime) oomKills(ctx context.Context, guid string, task containerd.Task) uint64 {
	if u, err := taskUsage(ctx, task); err == nil && u.OOMKillsKnown {
		return u.OOMKills
	}
	for _, path := range []string{
		filepath.Join("/sys/fs/cgroup/memory", r.cfg.Namespace, guid, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", r.cfg.Namespace, guid, "memory.events"),
	} {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		n, ok := parseOOMKill(io.LimitReader(f, 64<<10))
		f.Close()
		if ok {
			return n
		}
	}
	return 0
}

// parseOOMKill finds the "oom_kill N" line of a cgroup v1 memory.oom_control or v2
// memory.events file.
func parseOOMKill(r io.Reader) (uint64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// Usage reads the container's cgroup usage and the size of its own writes.
func (r *Runtime) Usage(ctx context.Context, guid string) (executor.Usage, error) {
	ctx = r.nsCtx(ctx)
	_, task, err := r.loadTask(ctx, guid)
	if err != nil {
		return executor.Usage{}, err
	}
	u, err := taskUsage(ctx, task)
	if err != nil {
		return executor.Usage{}, err
	}
	disk, err := r.diskBytes(guid)
	if err != nil {
		return executor.Usage{}, err
	}
	return executor.Usage{CPUTimeNs: u.CPUTimeNs, MemoryBytes: u.MemoryBytes, Pids: u.Pids, DiskBytes: disk}, nil
}
