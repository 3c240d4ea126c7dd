package devstack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Options shape the persistent dev stack. Zero values take the defaults; over a running
// stack they keep what it runs with, and a non-zero value that differs from it (a
// different port, number of replicas or database) is refused (ErrRunningStack), except
// Cells, which resizes it.
type Options struct {
	// Root is the repository (default: FindRoot).
	Root string
	// Home holds the stack's files (default: DefaultHome(Root), i.e. .drover).
	Home string
	// BinDir receives the built binaries (default: BinDir(Root), i.e. bin).
	BinDir string
	// DatabaseURL is used instead of starting the private Postgres of Home.
	DatabaseURL string
	// Replicas is the number of BBS processes (default 1).
	Replicas int
	// Ports of the first BBS (default DefaultPorts).
	Ports Ports
	// Cells is the number of cells, each a rep in the private containerd (default 1, or
	// over a running stack its number; negative: none, and no auctioneer). At most
	// MaxDevCells. Over a running stack with cells, a different number adds or removes
	// cells and leaves everything else running (see Stack.resize).
	Cells int
	// AuctioneerPorts (default DefaultAuctioneerPorts).
	AuctioneerPorts AuctioneerPorts
	// RepPort is the gRPC port of cell-1's rep (default DefaultRepPort); see devCellLayout.
	RepPort int
	// ConvergerDebugPort is the converger's debug port (default DefaultConvergerDebugPort).
	// A stack with cells runs a converger every DevConvergeInterval.
	ConvergerDebugPort int
	// RouteEmitterPorts and RouterPorts place the routing side a stack with cells runs:
	// NATS (scripts/nats.sh), the route-emitter and the stand-in router (defaults
	// DefaultRouteEmitterPorts, DefaultRouterPorts).
	RouteEmitterPorts RouteEmitterPorts
	RouterPorts       RouterPorts
	// FileserverPorts place the fileserver of a stack with cells (default
	// DefaultFileserverPorts).
	FileserverPorts FileserverPorts
	// RegistryPorts place the two private registries of a stack with cells (default
	// DefaultRegistryPorts).
	RegistryPorts RegistryPorts
	// StagerPorts place the stager of a stack with cells (default DefaultStagerPorts).
	StagerPorts StagerPorts
	// NoBookworm leaves the bookworm stack out (no scripts/stack.sh build): the cells
	// then serve busybox only.
	NoBookworm bool
	// Hosts, when positive, runs the stack on a test network of its own (multihost, see
	// upHosts): that many cell hosts (at most MaxDevCells) plus the control, router and
	// client hosts, each a network namespace with its own address.
	Hosts int
	// Logf reports progress (default: discard).
	Logf func(format string, args ...any)
}

func (o *Options) defaults() error {
	if o.Root == "" {
		root, err := FindRoot()
		if err != nil {
			return err
		}
		o.Root = root
	}
	if o.Home == "" {
		o.Home = DefaultHome(o.Root)
	}
	if o.BinDir == "" {
		o.BinDir = BinDir(o.Root)
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	orDefault(&o.Ports.GRPC, DefaultPorts.GRPC)
	orDefault(&o.Ports.HTTP, DefaultPorts.HTTP)
	orDefault(&o.Ports.Debug, DefaultPorts.Debug)
	switch {
	case o.Cells == 0:
		o.Cells = 1
	case o.Cells < 0:
		o.Cells = 0
	case o.Cells > MaxDevCells:
		return fmt.Errorf("cells: at most %d fit the dev stack's host port ranges, got %d", MaxDevCells, o.Cells)
	}
	// Port by port: a flag may set one port of a pair.
	orDefault(&o.AuctioneerPorts.GRPC, DefaultAuctioneerPorts.GRPC)
	orDefault(&o.AuctioneerPorts.Debug, DefaultAuctioneerPorts.Debug)
	orDefault(&o.RepPort, DefaultRepPort)
	orDefault(&o.ConvergerDebugPort, DefaultConvergerDebugPort)
	orDefault(&o.RouteEmitterPorts.GRPC, DefaultRouteEmitterPorts.GRPC)
	orDefault(&o.RouteEmitterPorts.Debug, DefaultRouteEmitterPorts.Debug)
	orDefault(&o.RouterPorts.HTTP, DefaultRouterPorts.HTTP)
	orDefault(&o.RouterPorts.Admin, DefaultRouterPorts.Admin)
	orDefault(&o.FileserverPorts.HTTP, DefaultFileserverPorts.HTTP)
	orDefault(&o.FileserverPorts.Debug, DefaultFileserverPorts.Debug)
	orDefault(&o.RegistryPorts.Plain, DefaultRegistryPorts.Plain)
	orDefault(&o.RegistryPorts.TLS, DefaultRegistryPorts.TLS)
	orDefault(&o.StagerPorts.GRPC, DefaultStagerPorts.GRPC)
	orDefault(&o.StagerPorts.Callback, DefaultStagerPorts.Callback)
	orDefault(&o.StagerPorts.Debug, DefaultStagerPorts.Debug)
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var err error
	for _, dir := range []*string{&o.Root, &o.Home, &o.BinDir} {
		if *dir, err = filepath.Abs(*dir); err != nil {
			return err
		}
	}
	return nil
}

// prepareStaging builds the lifecycle bundle's programs and, unless opts.NoBookworm, the
// bookworm stack's image (scripts/stack.sh, cached), which the cells then preload.
func (s *Stack) prepareStaging(ctx context.Context, opts Options) error {
	if err := Build(ctx, s.Root, filepath.Join(s.BinDir, "lifecycle"), LifecycleBinaries...); err != nil {
		return err
	}
	if opts.NoBookworm {
		return nil
	}
	opts.Logf("building the bookworm stack (scripts/stack.sh; cached after the first time)")
	image, err := EnsureStackImage(ctx, s.Root, "bookworm")
	if err != nil {
		return err
	}
	s.StackImages = map[string]string{"bookworm": image}
	return nil
}

// orDefault sets *v to d when it is zero.
func orDefault(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

// Up brings the persistent dev stack up in the background and returns once every
// process is healthy and every cell shows in the BBS: it starts the private Postgres,
// writes the dev certificates into Home/certs, builds the binaries into BinDir, starts
// the BBS processes, then (with cells) the private containerd, the auctioneer, one rep
// per cell, the converger, and the routing side (the private NATS, the stand-in router,
// the route-emitter), all detached. A stack that is already up and healthy is left as
// it is, or resized when it has cells and opts asks for another number of them; options
// that cannot apply to it are refused (ErrRunningStack) and change nothing. Any other
// earlier stack (half-working, or going from or to no cells) is stopped and brought up
// anew, keeping what it knew of which containerd and NATS it started.
func Up(ctx context.Context, opts Options) (*Stack, error) {
	given := opts
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	logf := opts.Logf
	if opts.Hosts > 0 { // multihost
		return upHosts(ctx, opts, given.Cells)
	}
	old, err := Load(opts.Home)
	if err == nil && old.Hosts != nil { // multihost: a multi-host stack goes entirely
		logf("taking the multi-host stack down")
		if err := old.Down(ctx); err != nil {
			return nil, err
		}
		old, err = nil, fs.ErrNotExist
	}
	if err == nil && given.Cells == 0 {
		opts.Cells = len(old.Reps) // keep the number of cells
	}
	if err == nil && old.healthy(ctx) && old.hasCredentials() && old.complete() {
		if (len(old.Reps) > 0) == (opts.Cells > 0) {
			if err := refuse(old.conflicts(given)); err != nil {
				return nil, err
			}
			if len(old.Reps) == opts.Cells {
				logf("dev stack is already up")
				return old, nil
			}
			logf("resizing the dev stack from %d to %d cells", len(old.Reps), opts.Cells)
			if err := old.resize(ctx, opts.Cells, logf); err != nil {
				return nil, err
			}
			return old, nil
		}
	}
	var ownContainerd, ownNATS bool
	if err == nil {
		// Stop what an earlier, half-working or differently shaped stack left running.
		logf("stopping the processes of an earlier stack")
		if err := old.Stop(ctx); err != nil {
			return nil, err
		}
		ownContainerd, ownNATS = old.Containerd.Own, old.NATS != nil && old.NATS.Own
		if opts.Cells == 0 {
			// Only cells use them: stop the ones the earlier stack started.
			if ownContainerd {
				if err := StopContainerd(ctx, old.Root, old.Home); err != nil {
					return nil, err
				}
			}
			if ownNATS {
				if err := StopNATS(ctx, old.Root, old.Home); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := os.MkdirAll(opts.Home, 0o755); err != nil {
		return nil, fmt.Errorf("dev stack home: %w", err)
	}
	s := &Stack{
		Root:        opts.Root,
		Home:        opts.Home,
		BinDir:      opts.BinDir,
		DatabaseURL: opts.DatabaseURL,
		Certs:       Certs{Dir: filepath.Join(opts.Home, "certs")},
	}
	if s.DatabaseURL == "" {
		logf("starting postgres under %s", filepath.Join(s.Home, "postgres"))
		url, err := StartPostgres(ctx, s.Root, s.Home)
		if err != nil {
			return nil, err
		}
		s.DatabaseURL, s.DatabasePasswordFile, s.OwnPostgres = url, PostgresPasswordFile(s.Home), true
	}
	binaries := []Binary{BBSBinary, DroverctlBinary}
	if opts.Cells > 0 {
		binaries = append(binaries, AuctioneerBinary, RepBinary, ConvergerBinary, RouteEmitterBinary, StandinRouterBinary, FileserverBinary, StagerBinary)
	}
	logf("building %s into %s", binaryNames(binaries), s.BinDir)
	if err := Build(ctx, s.Root, s.BinDir, binaries...); err != nil {
		return nil, err
	}
	if opts.Cells > 0 {
		if err := s.prepareStaging(ctx, opts); err != nil {
			return nil, err
		}
	}
	passphrase, err := loadOrCreatePassphrase(filepath.Join(s.Home, "encryption.key"))
	if err != nil {
		return nil, err
	}
	for i := range opts.Replicas {
		stride := i * PortStride
		ports := Ports{GRPC: opts.Ports.GRPC + stride, HTTP: opts.Ports.HTTP + stride, Debug: opts.Ports.Debug + stride}
		s.AddBBS(ports, passphrase, true)
	}
	var layouts []CellLayout
	for i := 1; i <= opts.Cells; i++ {
		layouts = append(layouts, devCellLayout(i, opts.RepPort))
	}
	if len(layouts) > 0 {
		// First: the cells' configuration names the registries.
		s.AddRegistries(opts.RegistryPorts, true)
		logf("starting containerd under %s", filepath.Join(s.Home, "containerd"))
		if s.Containerd, err = StartContainerd(ctx, s.Root, s.Home); err != nil {
			return nil, err
		}
		// Still running from the earlier stack, it is still the stack's own.
		s.Containerd.Own = s.Containerd.Own || ownContainerd
		s.AddCells(layouts, opts.AuctioneerPorts, true)
		s.AddConverger(opts.ConvergerDebugPort, DevConvergeInterval, true)
		logf("starting nats under %s", filepath.Join(s.Home, "nats"))
		nats, err := StartNATS(ctx, s.Root, s.Home)
		if err != nil {
			return nil, err
		}
		s.NATS = &nats
		s.AddRouting(opts.RouteEmitterPorts, opts.RouterPorts, DevRegisterInterval, true)
		s.AddFileserver(opts.FileserverPorts, true)
		s.AddStager(opts.StagerPorts, true)
	}
	logf("writing dev certificates into %s", s.Certs.Dir)
	if err := s.PrepareFiles(); err != nil {
		return nil, err
	}
	// The state goes to disk first, so that `down` can clean up after a failed start.
	if err := s.saveState(); err != nil {
		return nil, err
	}
	if err := s.Start(ctx, logf); err != nil {
		return nil, err
	}
	return s, nil
}

// AddCells describes the auctioneer on ports and one rep per layout, and points the BBS
// at the auctioneer. Call it after AddBBS.
func (s *Stack) AddCells(layouts []CellLayout, ports AuctioneerPorts, detached bool) {
	s.Auctioneer = s.newAuctioneer(ports, s.BBS[0].GRPCAddress(), detached)
	for _, b := range s.BBS {
		b.Config.AuctioneerAddress = s.Auctioneer.Address()
	}
	for i, l := range layouts {
		// Reps spread over the BBS replicas.
		s.Reps = append(s.Reps, s.newRep(l, s.BBS[i%len(s.BBS)].GRPCAddress(), detached))
	}
}

// PrepareFiles writes the certificates of the stack's processes, the fileserver's
// signing key and, with cells, the busybox image they preload.
func (s *Stack) PrepareFiles() error {
	if err := s.Certs.Ensure(); err != nil {
		return err
	}
	if s.Converger != nil {
		if err := s.Certs.EnsureConverger(); err != nil {
			return err
		}
	}
	if s.RouteEmitter != nil {
		if err := s.Certs.EnsureRouteEmitter(); err != nil {
			return err
		}
	}
	if s.Fileserver != nil {
		if err := ensureSigningKey(s.Fileserver.Config.SigningKeyFile); err != nil {
			return fmt.Errorf("fileserver signing key: %w", err)
		}
	}
	if s.Stager != nil {
		if err := s.Certs.EnsureStager(); err != nil {
			return err
		}
	}
	if s.Registry != nil {
		if err := s.Certs.EnsureRegistry(); err != nil {
			return err
		}
		for _, r := range s.Registry.All() {
			if err := r.prepare(); err != nil {
				return err
			}
		}
	}
	if len(s.Reps) == 0 {
		return nil
	}
	var ids []string
	for _, r := range s.Reps {
		ids = append(ids, r.CellID())
	}
	if err := s.Certs.EnsureCells(ids); err != nil {
		return err
	}
	return ensureBusyboxImage(s.BusyboxImage())
}

// Start starts the registries (pushing the standard images into them), the fileserver,
// the BBS processes, the auctioneer and the reps in that order, each waited on until healthy, waits until every cell shows in the BBS, then
// starts the converger (so that its first pass sees every cell present), then the
// router and the route-emitter. logf reports progress. Call PrepareFiles first.
func (s *Stack) Start(ctx context.Context, logf func(string, ...any)) error {
	if err := s.startRegistries(ctx, logf); err != nil {
		return err
	}
	if f := s.Fileserver; f != nil {
		logf("starting fileserver (http %s, debug %s)", f.Config.ServerAddress, f.Config.DebugAddress)
		if err := f.Start(ctx); err != nil {
			return err
		}
	}
	for _, b := range s.BBS {
		logf("starting %s (grpc %s, https %s, debug %s)", b.Name, b.Config.GRPCAddress, b.Config.HTTPAddress, b.Config.DebugAddress)
		if err := b.Start(ctx); err != nil {
			return err
		}
	}
	if s.Auctioneer != nil {
		logf("starting auctioneer (grpc %s, debug %s)", s.Auctioneer.Config.ListenAddress, s.Auctioneer.Config.DebugAddress)
		if err := s.Auctioneer.Start(ctx); err != nil {
			return err
		}
	}
	for _, r := range s.Reps {
		logf("starting %s (grpc %s, debug %s, zone %s)", r.Name, r.Config.ListenAddress, r.Config.DebugAddress, r.Config.Zone)
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	if len(s.Reps) > 0 {
		logf("waiting for %d cells to register in the BBS", len(s.Reps))
		if err := s.WaitForCells(ctx, ComponentStartTimeout); err != nil {
			return err
		}
	}
	if c := s.Converger; c != nil {
		logf("starting converger (debug %s, every %s)", c.Config.DebugAddress, c.Config.RepeatInterval.Duration())
		if err := c.Start(ctx); err != nil {
			return err
		}
	}
	if err := s.startRouting(ctx, logf); err != nil {
		return err
	}
	return s.startStager(ctx, logf)
}

func binaryNames(bs []Binary) string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return strings.Join(names, ", ")
}

// Down stops the stack's processes (see Stop), removes what its cells left, stops the
// containerd and Postgres it started, and forgets the stack.
func (s *Stack) Down(ctx context.Context) error {
	err := s.Stop(ctx)
	if s.Containerd.Own {
		err = errors.Join(err, StopContainerd(ctx, s.Root, s.Home))
	}
	if s.NATS != nil && s.NATS.Own {
		err = errors.Join(err, StopNATS(ctx, s.Root, s.Home))
	}
	if s.OwnPostgres {
		err = errors.Join(err, StopPostgres(ctx, s.Root, s.Home))
	}
	err = errors.Join(err, s.downHosts(ctx)) // multihost
	if err != nil {
		return err
	}
	return s.removeState()
}

// DownHome stops the dev stack in home if there is one, and in any case the private
// Postgres, containerd and NATS of home (which `make test` or an earlier stack may have
// started), so that nothing of home keeps running.
func DownHome(ctx context.Context, root, home string) error {
	s, err := Load(home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = nil
	case err == nil:
		err = s.Down(ctx)
	}
	// Also when the stack could not be read or stopped cleanly.
	return errors.Join(err, StopNATS(ctx, root, home), StopContainerd(ctx, root, home), StopPostgres(ctx, root, home))
}

// complete reports whether the stack runs the whole of its kind: with cells, the
// auctioneer, the converger, the routing side, the fileserver and the registries; without,
// none of them.
func (s *Stack) complete() bool {
	cells := len(s.Reps) > 0
	return (s.Auctioneer != nil) == cells && (s.Converger != nil) == cells && (s.RouteEmitter != nil) == cells &&
		(s.Router != nil) == cells && (s.Fileserver != nil) == cells && (s.Registry != nil) == cells &&
		(s.Stager != nil) == cells
}

// ServiceStatus is what Status reports about one process of the stack.
type ServiceStatus struct {
	Name string
	Pid  int
	// Addresses says where it listens, for people.
	Addresses string
	// Unhealthy says why the process is not healthy; nil when it is.
	Unhealthy error
}

// Status reports each process's pid (0 when not running), addresses and health:
// Postgres, containerd and NATS (see infraStatus), then the BBS processes, the
// auctioneer, the reps, the converger, the router, the route-emitter, the fileserver
// and the registries.
func (s *Stack) Status(ctx context.Context) []ServiceStatus {
	out := s.infraStatus(ctx)
	add := func(svc *Service, addresses string, healthy func(context.Context) error) {
		st := ServiceStatus{Name: svc.Name, Pid: svc.Pid(), Addresses: addresses}
		if st.Pid == 0 {
			st.Unhealthy = errors.New("not running")
		} else {
			st.Unhealthy = healthy(ctx)
		}
		out = append(out, st)
	}
	for _, b := range s.BBS {
		add(&b.Service, fmt.Sprintf("grpc %s  https %s  debug %s", b.Config.GRPCAddress, b.Config.HTTPAddress, b.Config.DebugAddress), b.Healthy)
	}
	if a := s.Auctioneer; a != nil {
		add(&a.Service, fmt.Sprintf("grpc %s  debug %s", a.Config.ListenAddress, a.Config.DebugAddress), a.Healthy)
	}
	for _, r := range s.Reps {
		add(&r.Service, fmt.Sprintf("grpc %s  debug %s  zone %s  namespace %s  bridge %s %s  ports %d-%d",
			r.Config.ListenAddress, r.Config.DebugAddress, r.Config.Zone, r.Config.Executor.ContainerdNamespace,
			r.Config.Executor.BridgeName, r.Config.Executor.Subnet, r.Config.Executor.PortRangeStart, r.Config.Executor.PortRangeEnd), r.Healthy)
	}
	if c := s.Converger; c != nil {
		add(&c.Service, fmt.Sprintf("debug %s  every %s", c.Config.DebugAddress, c.Config.RepeatInterval.Duration()), c.Healthy)
	}
	if r := s.Router; r != nil {
		add(&r.Service, fmt.Sprintf("http %s  admin %s  nats %s", r.Config.ListenAddress, r.Config.AdminAddress, s.NATS.URL), r.Healthy)
	}
	if e := s.RouteEmitter; e != nil {
		add(&e.Service, fmt.Sprintf("grpc %s  debug %s", e.Config.ListenAddress, e.Config.DebugAddress), e.Healthy)
	}
	if f := s.Fileserver; f != nil {
		add(&f.Service, fmt.Sprintf("http %s  debug %s", f.Config.ServerAddress, f.Config.DebugAddress), f.Healthy)
	}
	if s.Registry != nil {
		for _, r := range s.Registry.All() {
			add(&r.Service, fmt.Sprintf("%s  files %s", r.URL(), r.Dir), r.Healthy)
		}
	}
	if g := s.Stager; g != nil {
		add(&g.Service, fmt.Sprintf("grpc %s  callbacks %s  debug %s", g.Config.ListenAddress, g.Config.CallbackListenAddress, g.Config.DebugAddress), g.Healthy)
	}
	return out
}

// healthy reports whether every process runs and is healthy.
func (s *Stack) healthy(ctx context.Context) bool {
	if len(s.BBS) == 0 {
		return false
	}
	for _, st := range s.Status(ctx) {
		if st.Unhealthy != nil {
			return false
		}
	}
	return true
}
