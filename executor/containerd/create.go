package containerd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/network"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/identifiers"
	"github.com/containerd/containerd/mount"
	"github.com/containerd/containerd/oci"
)

// Create makes the container and starts its init. On error nothing is left behind.
func (r *Runtime) Create(ctx context.Context, spec executor.ContainerSpec) (_ executor.NetInfo, retErr error) {
	ctx = r.nsCtx(ctx)
	if err := identifiers.Validate(spec.Guid); err != nil {
		return executor.NetInfo{}, fmt.Errorf("%w: %v", executor.ErrGuidNotSpecified, err)
	}
	ref, err := parseRootFS(spec.RootFS, r.cfg.PreloadedRootFSes, r.cfg.ArbitrarySchemes, r.cfg.Registry.Default)
	if err != nil {
		return executor.NetInfo{}, err
	}
	unlock := r.locks.Lock(spec.Guid)
	defer unlock()
	if _, err := r.client.LoadContainer(ctx, spec.Guid); err == nil {
		return executor.NetInfo{}, fmt.Errorf("%w: %s exists", executor.ErrContainerGuidNotAvailable, spec.Guid)
	}
	img, release, err := r.image(ctx, ref, registryCreds{Username: spec.ImageUsername, Password: spec.ImagePassword})
	if err != nil {
		return executor.NetInfo{}, err
	}
	defer release()
	imgMeta, err := readImageConfig(ctx, img)
	if err != nil {
		return executor.NetInfo{}, err
	}

	var undo []func(context.Context)
	defer func() {
		if retErr == nil {
			return
		}
		cctx, cancel := r.cleanupCtx(ctx)
		defer cancel()
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i](cctx)
		}
	}()

	undo = append(undo, func(context.Context) { _ = os.RemoveAll(r.state.container(spec.Guid)) })
	if err := os.MkdirAll(r.state.container(spec.Guid), 0o700); err != nil {
		return executor.NetInfo{}, fmt.Errorf("container state dir: %w", err)
	}
	if err := writeFileAtomic(r.state.engineState(spec.Guid), spec.State); err != nil {
		return executor.NetInfo{}, fmt.Errorf("write container state: %w", err)
	}

	// An unprivileged container of a cell with user namespaces gets them from a holder
	// (userns.go), which goes once the container's init holds them.
	var userNS *idMap
	var holder *nsHolder
	if !spec.Privileged && r.cfg.UserNamespace != nil {
		m := newIDMap(*r.cfg.UserNamespace)
		userNS = &m
		if holder, err = startNSHolder(m); err != nil {
			return executor.NetInfo{}, err
		}
		defer holder.Stop()
	}

	undo = append(undo, func(c context.Context) {
		if err := r.net.Teardown(c, spec.Guid); err != nil {
			r.logger.Error("create-undo-network-failed", "guid", spec.Guid, "error", err)
		}
	})
	var att network.Attachment
	if holder != nil {
		att, err = r.net.SetupPinned(ctx, spec.Guid, spec.Ports, holder.pinNetns)
	} else {
		att, err = r.net.Setup(ctx, spec.Guid, spec.Ports)
	}
	if err != nil {
		return executor.NetInfo{}, fmt.Errorf("network setup: %w", err)
	}
	netInfo := executor.NetInfo{ExternalIP: att.ExternalIP, InternalIP: att.InternalIP, Ports: att.Ports}
	undo = append(undo, func(context.Context) {
		if err := r.fw.Remove(spec.Guid); err != nil {
			r.logger.Error("create-undo-firewall-failed", "guid", spec.Guid, "error", err)
		}
	})
	if err := r.applyFirewall(spec.Guid, att.InternalIP, spec.EgressRules); err != nil {
		return executor.NetInfo{}, fmt.Errorf("egress firewall: %w", err)
	}
	if err := r.writeNetworkFiles(spec.Guid, att.InternalIP); err != nil {
		return executor.NetInfo{}, err
	}

	in := specInputs{
		Spec:          spec,
		NetnsPath:     att.NetnsPath,
		HostsPath:     r.state.hosts(spec.Guid),
		ResolvPath:    r.state.resolvConf(spec.Guid),
		BusyboxPath:   r.cfg.BusyboxPath,
		SwapSupported: r.swapSupported,
	}
	snapshot := containerd.WithNewSnapshot(spec.Guid, img)
	if userNS != nil {
		in.UserNS, in.UserNSPath = userNS, holder.userNSPath()
		parent, err := r.remappedSnapshot(ctx, img, *userNS)
		if err != nil {
			return executor.NetInfo{}, err
		}
		snapshot = withSnapshotOn(spec.Guid, parent)
	}
	opts := containerSpecOpts(in)
	ctr, err := r.client.NewContainer(ctx, spec.Guid,
		containerd.WithSnapshotter(r.cfg.Snapshotter),
		snapshot,
		containerd.WithImage(img),
		containerd.WithNewSpec(append([]oci.SpecOpts{withImageEnv(imgMeta.Env)}, opts...)...),
		containerd.WithContainerLabels(containerLabels(r.cfg.Namespace, spec.Tags)),
	)
	if err != nil {
		return executor.NetInfo{}, fmt.Errorf("create container: %w", err)
	}
	undo = append(undo, func(c context.Context) {
		if err := ctr.Delete(c, containerd.WithSnapshotCleanup); err != nil {
			r.logger.Error("create-undo-container-failed", "guid", spec.Guid, "error", err)
		}
	})

	// The quota goes on the snapshot before it is mounted (quota.go).
	upper, err := r.upperDir(ctx, spec.Guid)
	if err != nil {
		return executor.NetInfo{}, err
	}
	diskQuota, err := r.limitDisk(spec.Guid, upper, spec.Resource.DiskMB)
	if err != nil {
		return executor.NetInfo{}, err
	}

	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err != nil {
		return executor.NetInfo{}, fmt.Errorf("create init task: %w", err)
	}
	undo = append(undo, func(c context.Context) {
		if _, err := task.Delete(c, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			r.logger.Error("create-undo-task-failed", "guid", spec.Guid, "error", err)
		}
	})
	if holder != nil {
		holder.Stop() // the init holds the namespaces now
	}
	if err := task.Start(ctx); err != nil {
		return executor.NetInfo{}, fmt.Errorf("start init: %w", err)
	}

	meta := containerMeta{
		Guid:      spec.Guid,
		DiskMB:    spec.Resource.DiskMB,
		CreatedAt: time.Now().UTC(),
		NetInfo:   netInfo,
		UpperDir:  upper,
		DiskQuota: diskQuota,
		Image:     imgMeta,
		UserNS:    userNS,
	}
	if err := writeJSON(r.state.containerMeta(spec.Guid), meta); err != nil {
		return executor.NetInfo{}, fmt.Errorf("write container meta: %w", err)
	}
	r.logger.Info("container-created", "guid", spec.Guid, "internal-ip", netInfo.InternalIP)
	return netInfo, nil
}

// image returns the image of a rootfs, and a release to call once the container is
// made (until then a pulled image is not garbage-collected).
func (r *Runtime) image(ctx context.Context, ref rootFSRef, creds registryCreds) (containerd.Image, func(), error) {
	if ref.Kind == rootFSPreloaded {
		img, err := r.preloaded(ctx, ref.Name)
		return img, func() {}, err
	}
	return r.registryImage(ctx, ref, creds)
}

// writeNetworkFiles writes the container's /etc/hosts and /etc/resolv.conf.
func (r *Runtime) writeNetworkFiles(guid, ip string) error {
	hosts := fmt.Sprintf("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n%s %s\n", ip, hostname(guid))
	if err := writeFileAtomic(r.state.hosts(guid), []byte(hosts)); err != nil {
		return fmt.Errorf("write hosts: %w", err)
	}
	host, _ := os.ReadFile("/etc/resolv.conf")
	if err := writeFileAtomic(r.state.resolvConf(guid), containerResolvConf(string(host))); err != nil {
		return fmt.Errorf("write resolv.conf: %w", err)
	}
	for _, p := range []string{r.state.hosts(guid), r.state.resolvConf(guid)} {
		if err := os.Chmod(p, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// containerResolvConf is the host's resolv.conf without loopback name servers (which
// are unreachable from the container's network namespace).
func containerResolvConf(host string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(host, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" && (strings.HasPrefix(f[1], "127.") || f[1] == "::1") {
			continue
		}
		if len(f) > 0 {
			b.WriteString(line + "\n")
		}
	}
	return []byte(b.String())
}

// upperDir finds the overlay upper dir of the container's snapshot.
func (r *Runtime) upperDir(ctx context.Context, key string) (string, error) {
	mounts, err := r.client.SnapshotService(r.cfg.Snapshotter).Mounts(ctx, key)
	if err != nil {
		return "", fmt.Errorf("snapshot mounts: %w", err)
	}
	return upperDirOf(mounts), nil
}

// upperDirOf returns the upperdir option of an overlay mount, or the source of a bind
// mount (a snapshot without parents), or "".
func upperDirOf(mounts []mount.Mount) string {
	for _, m := range mounts {
		for _, o := range m.Options {
			if dir, ok := strings.CutPrefix(o, "upperdir="); ok {
				return dir
			}
		}
		if m.Type == "bind" {
			return m.Source
		}
	}
	return ""
}

// Destroy stops every process (SIGTERM, SIGKILL after the grace period) and removes the
// task, container, snapshot, network attachment and state.
func (r *Runtime) Destroy(ctx context.Context, guid string) error {
	ctx = r.nsCtx(ctx)
	unlock := r.locks.Lock(guid)
	defer unlock()
	r.markDestroying(guid, true)
	defer r.markDestroying(guid, false)

	ctr, err := r.client.LoadContainer(ctx, guid)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("load container %s: %w", guid, err)
	default:
		info, err := ctr.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			return fmt.Errorf("load container %s: %w", guid, err)
		}
		if info.Labels[ownerLabel] != r.cfg.Namespace {
			// Not made by a runtime, but in the runtime's own namespace: it goes too.
			r.logger.Warn("removing-foreign-container", "guid", guid, "image", info.Image)
		}
		if err := r.stopTask(ctx, ctr); err != nil {
			return err
		}
		if err := ctr.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete container %s: %w", guid, err)
		}
		r.scheduleImageGC(info.Image)
	}
	if err := r.fw.Remove(guid); err != nil {
		return fmt.Errorf("egress firewall of %s: %w", guid, err)
	}
	if err := r.net.Teardown(ctx, guid); err != nil {
		return fmt.Errorf("network teardown of %s: %w", guid, err)
	}
	if err := os.RemoveAll(r.state.container(guid)); err != nil {
		return fmt.Errorf("remove state of %s: %w", guid, err)
	}
	r.logger.Info("container-destroyed", "guid", guid)
	return nil
}

// stopTask signals every process with SIGTERM (the init ignores it), waits up to the
// grace period for them to go, then kills everything and deletes the task.
func (r *Runtime) stopTask(ctx context.Context, ctr containerd.Container) error {
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load task of %s: %w", ctr.ID(), err)
	}
	if st, err := task.Status(ctx); err == nil && st.Status == containerd.Running {
		if err := task.Kill(ctx, syscall.SIGTERM, containerd.WithKillAll); err == nil {
			r.waitOnlyInit(ctx, task)
		}
	}
	if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete task of %s: %w", ctr.ID(), err)
	}
	return nil
}

// waitOnlyInit polls until only the init is left or the grace period ends.
func (r *Runtime) waitOnlyInit(ctx context.Context, task containerd.Task) {
	deadline := time.NewTimer(r.cfg.GracePeriod)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		pids, err := appPids(ctx, task)
		if err != nil || len(pids) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}
