package devstack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Options shape the persistent dev stack. Zero values take the defaults.
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
	if o.Ports == (Ports{}) {
		o.Ports = DefaultPorts
	}
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

// Up brings the persistent dev stack up in the background and returns once every BBS
// is healthy: it starts the private Postgres, writes the dev certificates into
// Home/certs, builds bbs and droverctl into BinDir and starts the BBS processes
// detached. A stack that is already up and healthy is left as it is.
func Up(ctx context.Context, opts Options) (*Stack, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	logf := opts.Logf
	old, err := Load(opts.Home)
	if err == nil && old.healthy(ctx) {
		logf("dev stack is already up")
		return old, nil
	}
	if err == nil {
		// Stop what an earlier, half-working stack left running before replacing it.
		logf("stopping the processes of an unhealthy earlier stack")
		if err := old.Stop(ctx); err != nil {
			return nil, err
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
		s.DatabaseURL, s.OwnPostgres = url, true
	}
	logf("writing dev certificates into %s", s.Certs.Dir)
	if err := s.Certs.Ensure(); err != nil {
		return nil, err
	}
	logf("building %s and %s into %s", BBSBinary.Name, DroverctlBinary.Name, s.BinDir)
	if err := Build(ctx, s.Root, s.BinDir, BBSBinary, DroverctlBinary); err != nil {
		return nil, err
	}
	passphrase, err := loadOrCreatePassphrase(filepath.Join(s.Home, "encryption.key"))
	if err != nil {
		return nil, err
	}
	for i := range opts.Replicas {
		stride := i * PortStride
		ports := Ports{GRPC: opts.Ports.GRPC + stride, HTTP: opts.Ports.HTTP + stride, Debug: opts.Ports.Debug + stride}
		s.BBS = append(s.BBS, s.newBBS(i, ports, passphrase, true))
	}
	// The state goes to disk first, so that `down` can clean up after a failed start.
	if err := s.saveState(); err != nil {
		return nil, err
	}
	for _, b := range s.BBS {
		logf("starting %s (grpc %s, https %s, debug %s)", b.Name, b.Config.GRPCAddress, b.Config.HTTPAddress, b.Config.DebugAddress)
		if err := b.Start(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Down stops every BBS of the stack, then its private Postgres, and forgets the stack.
func (s *Stack) Down(ctx context.Context) error {
	err := s.Stop(ctx)
	if s.OwnPostgres {
		err = errors.Join(err, StopPostgres(ctx, s.Root, s.Home))
	}
	if err != nil {
		return err
	}
	return s.removeState()
}

// DownHome stops the dev stack in home if there is one, and in any case the private
// Postgres of home (which `make test` may have started without a stack).
func DownHome(ctx context.Context, root, home string) error {
	s, err := Load(home)
	if errors.Is(err, fs.ErrNotExist) {
		return StopPostgres(ctx, root, home)
	}
	if err != nil {
		return err
	}
	if err := s.Down(ctx); err != nil {
		return err
	}
	return StopPostgres(ctx, root, home)
}

// BBSStatus is what Status reports about one BBS.
type BBSStatus struct {
	Name string
	Pid  int
	// Unhealthy says why the BBS is not healthy (see BBS.Healthy); nil when it is.
	Unhealthy error
	BBS       *BBS
}

// Status reports each BBS's pid (0 when not running) and health.
func (s *Stack) Status(ctx context.Context) []BBSStatus {
	var out []BBSStatus
	for _, b := range s.BBS {
		st := BBSStatus{Name: b.Name, Pid: b.Pid(), BBS: b}
		if st.Pid == 0 {
			st.Unhealthy = errors.New("not running")
		} else {
			st.Unhealthy = b.Healthy(ctx)
		}
		out = append(out, st)
	}
	return out
}

// healthy reports whether every BBS runs and is healthy.
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
