package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"drover.dev/executor"
	"drover.dev/executor/internal/keyedmutex"
)

// requiredPlugins are the CNI plugin binaries the cell's network uses.
var requiredPlugins = []string{"bridge", "host-local", "portmap"}

// Attachment is how one container is attached to the cell's network.
type Attachment struct {
	NetnsPath  string
	InternalIP string
	ExternalIP string
	Ports      []executor.PortMapping // container port → host port
}

// Manager attaches containers to one cell's network and detaches them. It is safe for
// concurrent use; calls for the same guid are serialised.
type Manager struct {
	cfg    Config
	logger *slog.Logger
	cni    *libcni.CNIConfig
	list   *libcni.NetworkConfigList
	hostIP string // where host ports are bound ("" = every local address)
	store  recordStore
	guids  keyedmutex.Mutex

	mu      sync.Mutex // guards records and ports
	records map[string]record
	ports   *portAllocator
}

// New validates cfg, prepares its state directory and loads the attachments an earlier
// Manager recorded there.
func New(cfg Config, logger *slog.Logger) (*Manager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	for _, p := range requiredPlugins {
		if _, err := os.Stat(filepath.Join(cfg.CNIBinDir, p)); err != nil {
			return nil, fmt.Errorf("network config: cni_bin_dir %s lacks the %s plugin: %w", cfg.CNIBinDir, p, err)
		}
	}
	for _, dir := range []string{netnsDir(cfg.StateDir), ipamDir(cfg.StateDir), cniCacheDir(cfg.StateDir), recordsDir(cfg.StateDir)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("network state dir: %w", err)
		}
	}
	confBytes, err := conflistJSON(cfg)
	if err != nil {
		return nil, fmt.Errorf("network conflist: %w", err)
	}
	list, err := libcni.ConfListFromBytes(confBytes)
	if err != nil {
		return nil, fmt.Errorf("network conflist: %w", err)
	}
	m := &Manager{
		cfg:    cfg,
		logger: logger.With("bridge", cfg.BridgeName),
		// An explicit exec: libcni sets a nil one lazily on each call, a data race when
		// containers are set up concurrently.
		cni: libcni.NewCNIConfigWithCacheDir([]string{cfg.CNIBinDir}, cniCacheDir(cfg.StateDir), &invoke.DefaultExec{
			RawExec:       &invoke.RawExec{Stderr: os.Stderr},
			PluginDecoder: version.PluginDecoder{},
		}),
		list:    list,
		store:   newRecordStore(recordsDir(cfg.StateDir)),
		records: map[string]record{},
		ports:   newPortAllocator(cfg.PortRangeStart, cfg.PortRangeEnd),
	}
	if ip := net.ParseIP(cfg.ExternalIP); !ip.IsUnspecified() {
		m.hostIP = cfg.ExternalIP
	}
	records, problems := m.store.loadAll()
	for _, p := range problems {
		m.logger.Warn("network-record-unreadable", "error", p)
	}
	for _, r := range records {
		if r.NetnsPath == "" {
			r.NetnsPath = m.netnsPath(r.Guid)
		}
		if err := m.ports.reserve(r.Guid, r.hostPorts()); err != nil {
			m.logger.Error("network-record-port-conflict", "guid", r.Guid, "error", err)
		}
		m.records[r.Guid] = r
	}
	m.logger.Info("network-manager-loaded", "attachments", len(records))
	return m, nil
}

// netnsPath is where guid's namespace file lives.
func (m *Manager) netnsPath(guid string) string {
	return filepath.Join(netnsDir(m.cfg.StateDir), guid)
}

// validateGuid refuses guids CNI would refuse as a container ID (they also name files).
func validateGuid(guid string) error {
	if !validID.MatchString(guid) {
		return fmt.Errorf("network: guid %q must be non-empty, start with a letter or digit and contain only letters, digits, '_', '.' and '-'", guid)
	}
	return nil
}

// PinNetns creates a network namespace and pins it at path, a new file (e.g. by
// bind-mounting a /proc/PID/ns/net onto it); on error it leaves nothing at path.
// Teardown unmounts and removes the file.
type PinNetns func(path string) error

// Setup gives the container guid a network namespace on the cell's bridge with each of
// containerPorts (de-duplicated) mapped to its own host port. On error nothing is left.
func (m *Manager) Setup(ctx context.Context, guid string, containerPorts []uint32) (Attachment, error) {
	return m.SetupPinned(ctx, guid, containerPorts, createNetns)
}

// SetupPinned is Setup on a network namespace made by pin (e.g. one owned by the
// container's user namespace) instead of a new one of the host's user namespace.
func (m *Manager) SetupPinned(ctx context.Context, guid string, containerPorts []uint32, pin PinNetns) (Attachment, error) {
	if err := validateGuid(guid); err != nil {
		return Attachment{}, err
	}
	if err := validateContainerPorts(containerPorts); err != nil {
		return Attachment{}, fmt.Errorf("network setup %q: %w", guid, err)
	}
	unlock := m.guids.Lock(guid)
	defer unlock()

	rec, err := m.reserve(guid, uniquePorts(containerPorts))
	if err != nil {
		return Attachment{}, err
	}
	rec, err = m.attach(ctx, rec, pin)
	if err != nil {
		cleanupErr := m.detach(context.WithoutCancel(ctx), rec)
		if cleanupErr != nil {
			m.logger.Error("network-setup-cleanup-failed", "guid", guid, "error", cleanupErr)
		}
		return Attachment{}, errors.Join(fmt.Errorf("network setup %q: %w", guid, err), cleanupErr)
	}
	m.logger.Info("network-attached", "guid", guid, "ip", rec.InternalIP, "ports", rec.Ports)
	return rec.attachment(), nil
}

// reserve allocates host ports for guid and records the attachment-to-be on disk, so that
// a crash from here on leaves something Prune can tear down.
func (m *Manager) reserve(guid string, containerPorts []uint32) (record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, exists := m.records[guid]; exists {
		return record{}, fmt.Errorf("network setup %q: already set up", guid)
	}
	hostPorts, err := m.ports.allocate(guid, len(containerPorts))
	if err != nil {
		return record{}, fmt.Errorf("network setup %q: %w", guid, err)
	}
	rec := record{
		Guid:       guid,
		NetnsPath:  m.netnsPath(guid),
		ExternalIP: m.cfg.ExternalIP,
		Ports:      make([]executor.PortMapping, len(containerPorts)),
	}
	for i, cp := range containerPorts {
		rec.Ports[i] = executor.PortMapping{ContainerPort: cp, HostPort: hostPorts[i]}
	}
	if err := m.store.save(rec); err != nil {
		m.ports.release(guid)
		return record{}, fmt.Errorf("network setup %q: %w", guid, err)
	}
	m.records[guid] = rec
	return rec, nil
}

// attach creates the namespace and runs CNI ADD, and records the result.
func (m *Manager) attach(ctx context.Context, rec record, pin PinNetns) (record, error) {
	if err := pin(rec.NetnsPath); err != nil {
		return rec, err
	}
	if err := loopbackUp(rec.NetnsPath); err != nil {
		return rec, err
	}
	res, err := m.cni.AddNetworkList(ctx, m.list, m.runtimeConf(rec.Guid, rec.NetnsPath, rec.Ports))
	if err != nil {
		return rec, fmt.Errorf("cni add: %w", err)
	}
	ip, err := containerIPv4(res)
	if err != nil {
		return rec, err
	}
	rec.InternalIP = ip
	rec.Ready = true
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.store.save(rec); err != nil {
		return rec, err
	}
	m.records[rec.Guid] = rec
	return rec, nil
}

// loopbackUp brings up lo inside the namespace at path.
func loopbackUp(path string) error {
	return ns.WithNetNSPath(path, func(ns.NetNS) error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("find loopback in %s: %w", path, err)
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("bring up loopback in %s: %w", path, err)
		}
		return nil
	})
}

// containerIPv4 finds the container's IPv4 address in a CNI result.
func containerIPv4(res types.Result) (string, error) {
	cur, err := types100.NewResultFromResult(res)
	if err != nil {
		return "", fmt.Errorf("cni result: %w", err)
	}
	for _, ipc := range cur.IPs {
		if ipc.Address.IP.To4() == nil {
			continue
		}
		if ipc.Interface != nil {
			i := *ipc.Interface
			if i < 0 || i >= len(cur.Interfaces) || cur.Interfaces[i].Sandbox == "" {
				continue
			}
		}
		return ipc.Address.IP.String(), nil
	}
	return "", fmt.Errorf("cni result has no IPv4 address for %s", containerIfName)
}

// placeholderPorts stands in for unknown mappings on DEL: the portmap plugin only tears
// down when it is given some mapping, and its teardown is keyed by container ID alone.
var placeholderPorts = []executor.PortMapping{{ContainerPort: 1, HostPort: 1}}

// runtimeConf is the CNI runtime configuration of guid's attachment.
func (m *Manager) runtimeConf(guid, netnsPath string, ports []executor.PortMapping) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{ContainerID: guid, NetNS: netnsPath, IfName: containerIfName}
	if len(ports) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": portMapArgs(m.hostIP, ports)}
	}
	return rt
}

// Teardown removes guid's attachment: CNI DEL (veth, IP, iptables rules), the namespace,
// the host ports and the record. Tearing down what is not there succeeds.
func (m *Manager) Teardown(ctx context.Context, guid string) error {
	if err := validateGuid(guid); err != nil {
		return err
	}
	unlock := m.guids.Lock(guid)
	defer unlock()

	m.mu.Lock()
	rec, ok := m.records[guid]
	m.mu.Unlock()
	if !ok {
		// Not ours on record; clear a namespace left without one, if any.
		rec = record{Guid: guid, NetnsPath: m.netnsPath(guid)}
		if _, err := os.Lstat(rec.NetnsPath); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	if err := m.detach(ctx, rec); err != nil {
		return fmt.Errorf("network teardown %q: %w", guid, err)
	}
	m.logger.Info("network-detached", "guid", guid)
	return nil
}

// detach undoes rec step by step. It keeps the record when CNI DEL fails, so that a later
// Teardown or Prune can retry with everything it needs.
func (m *Manager) detach(ctx context.Context, rec record) error {
	netnsPath := ""
	if ns.IsNSorErr(rec.NetnsPath) == nil {
		netnsPath = rec.NetnsPath
	}
	ports := rec.Ports
	if len(ports) == 0 {
		ports = placeholderPorts
	}
	if err := m.cni.DelNetworkList(ctx, m.list, m.runtimeConf(rec.Guid, netnsPath, ports)); err != nil {
		return fmt.Errorf("cni del: %w", err)
	}
	return m.forget(rec)
}

// forget removes rec's namespace, host ports and record, what remains of an attachment
// once CNI DEL has run (or, for RemoveCell, could not).
func (m *Manager) forget(rec record) error {
	if err := removeNetns(rec.NetnsPath); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ports.release(rec.Guid)
	delete(m.records, rec.Guid)
	return m.store.remove(rec.Guid)
}

// Lookup returns guid's attachment, also one set up by an earlier Manager on the same
// state dir.
func (m *Manager) Lookup(guid string) (Attachment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.records[guid]
	if !ok || !rec.Ready {
		return Attachment{}, false
	}
	return rec.attachment(), true
}
