package containerd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"drover.dev/executor"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// User namespaces: an unprivileged container of a cell with a UserNamespace config runs
// in a user namespace of its own that maps container ids 0..size-1 onto the cell's host
// range. runc 1.1 joins namespaces given by path before it makes the others, user
// namespace first, and cannot join a network namespace the host's user namespace owns
// from inside another one; and sysfs can only be mounted in a network namespace the
// container's user namespace owns. So the user and network namespaces are made
// together by a small holder process (nsHolder), CNI attaches the network namespace
// (pinned by a bind mount, as the network manager does for its own), and the container
// joins both by path; the holder goes once the container's init holds them.

// overflowID is the id a host id outside a container's range reads as (nobody).
const overflowID = 65534

// idMap is a container's id mapping: container id i is host id Host*+i for i < Size.
type idMap struct {
	HostUID uint32 `json:"host_uid"`
	HostGID uint32 `json:"host_gid"`
	Size    uint32 `json:"size"`
}

// newIDMap is the mapping of a validated config.
func newIDMap(u executor.UserNamespace) idMap {
	return idMap{HostUID: uint32(u.HostUID), HostGID: uint32(u.HostGID), Size: uint32(u.Size)}
}

// hostUID is the host uid of container uid u; a nil map is the identity.
func (m *idMap) hostUID(u uint32) uint32 {
	if m == nil {
		return u
	}
	return m.HostUID + m.clamp(u)
}

// hostGID is the host gid of container gid g; a nil map is the identity.
func (m *idMap) hostGID(g uint32) uint32 {
	if m == nil {
		return g
	}
	return m.HostGID + m.clamp(g)
}

// clamp is id, or the overflow id when the range does not hold it.
func (m *idMap) clamp(id uint32) uint32 {
	if id >= m.Size {
		return overflowID
	}
	return id
}

// containerUID is the container uid of host uid u (overflowID outside the range).
func (m *idMap) containerUID(u uint32) uint32 {
	if m == nil {
		return u
	}
	if u < m.HostUID || u-m.HostUID >= m.Size {
		return overflowID
	}
	return u - m.HostUID
}

// containerGID is the container gid of host gid g (overflowID outside the range).
func (m *idMap) containerGID(g uint32) uint32 {
	if m == nil {
		return g
	}
	if g < m.HostGID || g-m.HostGID >= m.Size {
		return overflowID
	}
	return g - m.HostGID
}

// withUserNamespace joins the user namespace at path and states its mapping (runc
// needs it to own what it creates for the container).
func withUserNamespace(m idMap, path string) oci.SpecOpts {
	return oci.Compose(
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UserNamespace, Path: path}),
		func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			s.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: m.HostUID, Size: m.Size}}
			s.Linux.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: m.HostGID, Size: m.Size}}
			return nil
		},
	)
}

// nsHolder is a process (the host's cat on a pipe) that holds a new user namespace with
// a container's mapping and a network namespace owned by it.
type nsHolder struct {
	cmd   *exec.Cmd
	stdin *os.File
	stop  sync.Once
}

// holderBinary is what the holder runs: it waits for its input to end.
const holderBinary = "/bin/cat"

// startNSHolder starts the holder of mapping m. Stop ends it; it also ends by itself
// when this process dies (its input then ends; no Pdeathsig, which Go would fire when
// the forking thread, not the process, goes).
func startNSHolder(m idMap) (*nsHolder, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	cmd := exec.Command(holderBinary)
	cmd.Stdin = rd
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(m.HostUID), Size: int(m.Size)}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(m.HostGID), Size: int(m.Size)}},
		// "deny" would be permanent for the namespace: the container could not set groups.
		GidMappingsEnableSetgroups: true,
	}
	if err := cmd.Start(); err != nil {
		wr.Close()
		return nil, fmt.Errorf("start the user namespace holder: %w", err)
	}
	return &nsHolder{cmd: cmd, stdin: wr}, nil
}

// userNSPath is the holder's user namespace.
func (h *nsHolder) userNSPath() string { return fmt.Sprintf("/proc/%d/ns/user", h.cmd.Process.Pid) }

// netNSPath is the holder's network namespace.
func (h *nsHolder) netNSPath() string { return fmt.Sprintf("/proc/%d/ns/net", h.cmd.Process.Pid) }

// pinNetns bind-mounts the holder's network namespace onto path, a new file (what the
// network manager then attaches and, at teardown, unmounts and removes).
func (h *nsHolder) pinNetns(path string) (err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("create netns file %s: %w", path, err)
	}
	f.Close()
	if err := unix.Mount(h.netNSPath(), path, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return fmt.Errorf("bind-mount the container's network namespace onto %s: %w", path, err)
	}
	return nil
}

// Stop ends the holder and reaps it (once); the namespaces live on in what joined them.
func (h *nsHolder) Stop() {
	h.stop.Do(func() {
		h.stdin.Close()
		_ = h.cmd.Wait()
	})
}
