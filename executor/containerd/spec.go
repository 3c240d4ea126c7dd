package containerd

import (
	"strings"

	"drover.dev/executor"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Labels the runtime puts on what it creates.
const (
	// ownerLabel marks containers and images owned by a runtime; the value is its namespace.
	ownerLabel = "drover.dev/owner"
	// tagLabelPrefix prefixes each ContainerSpec tag.
	tagLabelPrefix = "drover.dev/tag."
)

// busyboxMountPath is where the host's static busybox is mounted in every container.
const busyboxMountPath = "/.drover/busybox"

// initArgs is the container's init: it ignores SIGTERM (so that a graceful stop reaches
// the processes first), and only waits, reaping every orphan reparented to it.
var initArgs = []string{busyboxMountPath, "sh", "-c",
	`trap "" TERM; while :; do ` + busyboxMountPath + ` sleep 3600 & wait; done`}

// specInputs is what the container spec is made from besides the image.
type specInputs struct {
	Spec          executor.ContainerSpec
	NetnsPath     string
	HostsPath     string
	ResolvPath    string
	BusyboxPath   string
	SwapSupported bool
	// UserNS, when set, is the container's mapping, and UserNSPath the user namespace
	// (holding it) the container joins.
	UserNS     *idMap
	UserNSPath string
}

// containerSpecOpts builds the OCI spec options of a container: init process, env,
// mounts, network namespace, limits and security.
func containerSpecOpts(in specInputs) []oci.SpecOpts {
	s := in.Spec
	mounts := []specs.Mount{
		bindMount(in.BusyboxPath, busyboxMountPath, true),
		bindMount(in.HostsPath, "/etc/hosts", false),
		bindMount(in.ResolvPath, "/etc/resolv.conf", false),
	}
	for _, m := range s.BindMounts {
		mounts = append(mounts, bindMount(m.Source, m.Destination, m.ReadOnly))
	}
	opts := []oci.SpecOpts{
		oci.WithProcessArgs(initArgs...),
		oci.WithProcessCwd("/"),
		oci.WithUIDGID(0, 0),
		oci.WithEnv(s.Env),
		oci.WithHostname(hostname(s.Guid)),
		oci.WithMounts(mounts),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: in.NetnsPath}),
	}
	if in.UserNS != nil {
		opts = append(opts, withUserNamespace(*in.UserNS, in.UserNSPath))
	}
	opts = append(opts, limitOpts(s, in.SwapSupported)...)
	if s.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	} else {
		opts = append(opts, seccomp.WithDefaultProfile(), oci.WithNoNewPrivileges)
	}
	return opts
}

// limitOpts maps the resource limits onto cgroup settings.
func limitOpts(s executor.ContainerSpec, swapSupported bool) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if s.Resource.MemoryMB > 0 {
		limit := uint64(s.Resource.MemoryMB) << 20
		opts = append(opts, oci.WithMemoryLimit(limit))
		if swapSupported {
			opts = append(opts, oci.WithMemorySwap(int64(limit)))
		}
	}
	if s.CPUWeight > 0 {
		opts = append(opts, oci.WithCPUShares(cpuShares(s.CPUWeight)))
	}
	if s.Resource.MaxPids > 0 {
		opts = append(opts, oci.WithPidsLimit(int64(s.Resource.MaxPids)))
	}
	return opts
}

// cpuShares is Diego's LimitInShares: weight 100 is 1024 shares (at least 2).
func cpuShares(weight uint32) uint64 {
	return max(uint64(weight)*1024/100, 2)
}

func bindMount(src, dst string, readOnly bool) specs.Mount {
	options := []string{"rbind"}
	if readOnly {
		options = append(options, "ro")
	} else {
		options = append(options, "rw")
	}
	return specs.Mount{Type: "bind", Source: src, Destination: dst, Options: options}
}

// hostname is the container's hostname: its guid, cut to the kernel's 64 bytes.
func hostname(guid string) string {
	if len(guid) > 63 {
		return guid[:63]
	}
	return guid
}

// containerLabels are the owner label plus one label per tag.
func containerLabels(namespace string, tags map[string]string) map[string]string {
	labels := map[string]string{ownerLabel: namespace}
	for k, v := range tags {
		labels[tagLabelPrefix+k] = v
	}
	return labels
}

// tagsFromLabels is the inverse of containerLabels.
func tagsFromLabels(labels map[string]string) map[string]string {
	tags := map[string]string{}
	for k, v := range labels {
		if name, ok := strings.CutPrefix(k, tagLabelPrefix); ok {
			tags[name] = v
		}
	}
	return tags
}

// processSpec derives an exec'd process from the container's init process (which
// carries capabilities, no-new-privileges and the like).
func processSpec(base *specs.Process, p executor.ProcessSpec, u containerUser) *specs.Process {
	out := *base
	out.Terminal = false
	out.ConsoleSize = nil
	out.Args = append([]string{p.Path}, p.Args...)
	out.Cwd = p.Dir
	if out.Cwd == "" {
		out.Cwd = "/"
	}
	out.User = specs.User{UID: u.UID, GID: u.GID, AdditionalGids: u.AdditionalGIDs}
	var userEnv []string
	if u.Home != "" {
		userEnv = append(userEnv, "HOME="+u.Home)
	}
	if u.Name != "" {
		userEnv = append(userEnv, "USER="+u.Name)
	}
	out.Env = mergeEnv(mergeEnv(userEnv, base.Env), p.Env)
	out.Rlimits = nil
	if p.Nofile > 0 {
		out.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: p.Nofile, Soft: p.Nofile}}
	}
	return &out
}

// mergeEnv appends add to base; a later NAME replaces an earlier one in place.
func mergeEnv(base, add []string) []string {
	out := append([]string(nil), base...)
	index := map[string]int{}
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		index[name] = i
	}
	for _, kv := range add {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			out[i] = kv
			continue
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	return out
}
