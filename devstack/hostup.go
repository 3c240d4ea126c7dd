package devstack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// upHosts brings the dev stack up on a test network of its own (Options.Hosts, `make up
// HOSTS=N`): the control host runs the private Postgres (HostPostgresHome), the BBS, the
// auctioneer, the converger, the route-emitter, the fileserver, the stager and the
// registries; the router host NATS and the stand-in router; each of opts.Hosts cell
// hosts one rep, in the private containerd (which stays in the root namespace); the
// client host nothing. Every service listens on its host's address at the dev stack's
// ports (PlaceOnHosts), all detached. A multi-host stack of the same size that is up and
// healthy is left as it is; any other earlier stack is taken down first. Down removes
// the test network with the rest.
func upHosts(ctx context.Context, opts Options, givenCells int) (*Stack, error) {
	logf := opts.Logf
	if err := validateHostsOptions(opts, givenCells); err != nil {
		return nil, err
	}
	if old, err := Load(opts.Home); err == nil {
		if old.Hosts != nil && len(old.Reps) == opts.Hosts && old.healthy(ctx) && old.complete() {
			logf("the multi-host dev stack is already up (test network %s)", old.Hosts.Subnet)
			return old, nil
		}
		logf("taking the earlier stack down")
		if err := old.Down(ctx); err != nil {
			return nil, err
		}
	}
	s := &Stack{Root: opts.Root, Home: opts.Home, BinDir: opts.BinDir, Certs: Certs{Dir: filepath.Join(opts.Home, "certs")}}
	id, err := NewHostID()
	if err != nil {
		return nil, err
	}
	logf("creating the test network (%d cell hosts)", opts.Hosts)
	if s.Hosts, err = CreateHostNetwork(ctx, id, opts.Hosts); err != nil {
		return nil, err
	}
	// From here on `down` can remove what was made.
	if err := s.saveState(); err != nil {
		return nil, errors.Join(err, s.Hosts.Remove(context.WithoutCancel(ctx)))
	}
	for _, h := range s.Hosts.Hosts {
		logf("  host %-8s %-12s netns %s", h.Name, h.IP, h.Netns)
	}
	nats, err := s.describeHosts(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := s.saveState(); err != nil {
		return nil, err
	}
	logf("starting nats on the router host (%s)", nats.Config.Listen)
	if err := nats.Start(ctx, s.NATS); err != nil {
		return nil, err
	}
	if err := s.Start(ctx, logf); err != nil {
		return nil, err
	}
	return s, nil
}

// validateHostsOptions names every option a multi-host dev stack cannot take (opts
// after defaults; givenCells as given).
func validateHostsOptions(opts Options, givenCells int) error {
	var errs []error
	if opts.Hosts > MaxDevCells {
		errs = append(errs, fmt.Errorf("hosts: at most %d cell hosts fit the dev stack's host port ranges, got %d", MaxDevCells, opts.Hosts))
	}
	if givenCells != 0 && givenCells != opts.Hosts {
		errs = append(errs, fmt.Errorf("cells: each cell has a host of its own: must be %d (or not given) with hosts %d, got %d", opts.Hosts, opts.Hosts, givenCells))
	}
	if opts.DatabaseURL != "" {
		errs = append(errs, errors.New("database-url: a multi-host stack runs its own Postgres on the control host, so it cannot be given with hosts"))
	}
	if opts.Replicas > 1 { // defaults made 0 into 1
		errs = append(errs, fmt.Errorf("replicas: a multi-host stack runs one BBS, so it must be 1 with hosts, got %d", opts.Replicas))
	}
	return errors.Join(errs...)
}

// describeHosts starts the infrastructure (Postgres on control, containerd) and builds
// the binaries of a multi-host dev stack, then describes its services and places them
// on s.Hosts. It returns the router host's nats-server, for the caller to start.
func (s *Stack) describeHosts(ctx context.Context, opts Options) (*HostNATS, error) {
	logf := opts.Logf
	var err error
	logf("starting postgres on the control host (%s)", HostPostgresHome(s.Home))
	if s.DatabaseURL, s.DatabasePasswordFile, err = StartHostPostgres(ctx, s.Root, s.Home, s.Hosts); err != nil {
		return nil, err
	}
	binaries := []Binary{BBSBinary, DroverctlBinary, AuctioneerBinary, RepBinary, ConvergerBinary, RouteEmitterBinary, StandinRouterBinary, FileserverBinary, StagerBinary}
	logf("building %s into %s", binaryNames(binaries), s.BinDir)
	if err := Build(ctx, s.Root, s.BinDir, binaries...); err != nil {
		return nil, err
	}
	if err := s.prepareStaging(ctx, opts); err != nil {
		return nil, err
	}
	passphrase, err := loadOrCreatePassphrase(filepath.Join(s.Home, "encryption.key"))
	if err != nil {
		return nil, err
	}
	s.AddBBS(opts.Ports, passphrase, true)
	s.AddRegistries(opts.RegistryPorts, true)
	logf("starting containerd under %s", filepath.Join(s.Home, "containerd"))
	if s.Containerd, err = StartContainerd(ctx, s.Root, s.Home); err != nil {
		return nil, err
	}
	var layouts []CellLayout
	for i := 1; i <= opts.Hosts; i++ {
		layouts = append(layouts, devCellLayout(i, opts.RepPort))
	}
	s.AddCells(layouts, opts.AuctioneerPorts, true)
	s.AddConverger(opts.ConvergerDebugPort, DevConvergeInterval, true)
	nats, err := s.AddHostNATS(s.Hosts, true)
	if err != nil {
		return nil, err
	}
	s.AddRouting(opts.RouteEmitterPorts, opts.RouterPorts, DevRegisterInterval, true)
	s.AddFileserver(opts.FileserverPorts, true)
	s.AddStager(opts.StagerPorts, true)
	if err := s.PlaceOnHosts(s.Hosts); err != nil {
		return nil, err
	}
	logf("writing dev certificates into %s", s.Certs.Dir)
	return nats, s.PrepareFiles()
}

// downHosts stops the control host's Postgres and removes the test network of a
// multi-host stack (after Stop).
func (s *Stack) downHosts(ctx context.Context) error {
	if s.Hosts == nil {
		return nil
	}
	return errors.Join(StopHostPostgres(ctx, s.Root, s.Home), s.Hosts.Remove(ctx))
}
