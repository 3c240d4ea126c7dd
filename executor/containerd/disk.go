package containerd

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"drover.dev/executor"
)

// pollDisk measures every container's upper dir each DiskPollInterval and, where the
// filesystem does not enforce disk_mb (see quota.go), stops the processes of containers
// over it.
func (r *Runtime) pollDisk() {
	defer r.wg.Done()
	tick := time.NewTicker(r.cfg.DiskPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
			r.checkDisks()
		}
	}
}

func (r *Runtime) checkDisks() {
	entries, err := os.ReadDir(filepath.Join(r.cfg.StateDir, "containers"))
	if err != nil {
		return
	}
	for _, e := range entries {
		meta, ok, err := r.state.readContainerMeta(e.Name())
		if err != nil || !ok || meta.UpperDir == "" || r.isDestroying(meta.Guid) {
			continue
		}
		used, err := dirSize(meta.UpperDir)
		if err != nil {
			continue
		}
		r.mu.Lock()
		r.diskUsage[meta.Guid] = used
		already := r.diskExceeded[meta.Guid]
		r.mu.Unlock()
		if meta.DiskMB > 0 && !meta.DiskQuota && used > uint64(meta.DiskMB)<<20 && !already {
			r.stopForDisk(meta, used)
		}
	}
}

// stopForDisk kills the container's processes (the init stays for Destroy) and emits
// RuntimeDiskExceeded.
func (r *Runtime) stopForDisk(meta containerMeta, used uint64) {
	_, task, err := r.loadTask(r.ctx, meta.Guid)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.diskExceeded[meta.Guid] = true
	r.mu.Unlock()
	pids, err := appPids(r.ctx, task)
	if err != nil {
		r.logger.Error("disk-exceeded-list-processes-failed", "guid", meta.Guid, "error", err)
	}
	for _, pid := range pids {
		_ = syscall.Kill(int(pid), syscall.SIGKILL)
	}
	reason := diskExceededReason(used, meta.DiskMB)
	r.logger.Info("disk-quota-exceeded", "guid", meta.Guid, "reason", reason)
	r.events.Publish(executor.RuntimeEvent{Guid: meta.Guid, Kind: executor.RuntimeDiskExceeded, Reason: reason})
}

// diskExceededReason says by how much a container went over its disk limit.
func diskExceededReason(usedBytes uint64, limitMB int) string {
	return fmt.Sprintf("disk quota exceeded: wrote %d MB, limit %d MB", (usedBytes+(1<<20)-1)>>20, limitMB)
}

// diskBytes is the last measured disk use of guid, measured now when there is none.
func (r *Runtime) diskBytes(guid string) (uint64, error) {
	r.mu.Lock()
	used, ok := r.diskUsage[guid]
	r.mu.Unlock()
	if ok {
		return used, nil
	}
	meta, found, err := r.state.readContainerMeta(guid)
	if err != nil || !found || meta.UpperDir == "" {
		return 0, err
	}
	return dirSize(meta.UpperDir)
}

// dirSize is the space the files under dir take (allocated blocks, hard links once).
func dirSize(dir string) (uint64, error) {
	var total uint64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			total += uint64(info.Size())
			return nil
		}
		if st.Nlink > 1 && !info.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += uint64(st.Blocks) * 512
		return nil
	})
	return total, err
}
