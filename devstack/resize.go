package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// EvacuationWait bounds how long a resize waits for the rep of a removed cell to hand
// its instances over and exit before it is stopped anyway.
const EvacuationWait = 3 * time.Minute

// evacuationPoll is how often a resize checks whether an evacuating rep exited.
const evacuationPoll = 500 * time.Millisecond

// resizeCordonReason is the cordon a resize puts on the cells it removes, so that what
// they evacuate lands on the cells that stay.
const resizeCordonReason = "devstack: removing the cell"

// ErrRunningStack is wrapped by the error of Up when options cannot apply to the
// running stack.
var ErrRunningStack = errors.New("cannot apply to a running stack: run `make down` first")

// conflicts lists, one "-flag want (it runs with have)" each, the options given (the
// non-zero fields of given, named after `devstack up`'s flags) that differ from what
// the running stack s runs with. Cells is not among them: a resize applies it.
func (s *Stack) conflicts(given Options) []string {
	var out []string
	check := func(flag string, want int, have string) {
		if want != 0 && strconv.Itoa(want) != have {
			out = append(out, fmt.Sprintf("-%s %d (it runs with %s)", flag, want, have))
		}
	}
	port := func(address string) string {
		_, p, err := net.SplitHostPort(address)
		if err != nil {
			return "none"
		}
		return p
	}
	none := "none"
	check("replicas", given.Replicas, strconv.Itoa(len(s.BBS)))
	if given.DatabaseURL != "" && (s.OwnPostgres || given.DatabaseURL != s.DatabaseURL) {
		have := "the private Postgres"
		if !s.OwnPostgres {
			have = "another database"
		}
		out = append(out, fmt.Sprintf("-database-url (it runs with %s)", have))
	}
	if len(s.BBS) > 0 {
		c := s.BBS[0].Config
		check("grpc-port", given.Ports.GRPC, port(c.GRPCAddress))
		check("http-port", given.Ports.HTTP, port(c.HTTPAddress))
		check("debug-port", given.Ports.Debug, port(c.DebugAddress))
	}
	addr := func(present bool, address string) string {
		if !present {
			return none
		}
		return port(address)
	}
	a, r, c, e, f := s.Auctioneer, s.Router, s.Converger, s.RouteEmitter, s.Fileserver
	check("auctioneer-port", given.AuctioneerPorts.GRPC, addr(a != nil, a.listen()))
	check("auctioneer-debug-port", given.AuctioneerPorts.Debug, addr(a != nil, a.debug()))
	repPort := none
	if len(s.Reps) > 0 {
		repPort = port(s.Reps[0].Config.ListenAddress)
	}
	check("rep-port", given.RepPort, repPort)
	check("converger-debug-port", given.ConvergerDebugPort, addr(c != nil, c.debug()))
	check("router-port", given.RouterPorts.HTTP, addr(r != nil, r.listen()))
	check("router-admin-port", given.RouterPorts.Admin, addr(r != nil, r.admin()))
	check("route-emitter-port", given.RouteEmitterPorts.GRPC, addr(e != nil, e.listen()))
	check("route-emitter-debug-port", given.RouteEmitterPorts.Debug, addr(e != nil, e.debug()))
	check("fileserver-port", given.FileserverPorts.HTTP, addr(f != nil, f.listen()))
	check("fileserver-debug-port", given.FileserverPorts.Debug, addr(f != nil, f.debug()))
	var plain, tls string
	if s.Registry != nil {
		plain, tls = s.Registry.Plain.Host(), s.Registry.Auth.Host()
	}
	check("registry-port", given.RegistryPorts.Plain, addr(s.Registry != nil, plain))
	check("registry-tls-port", given.RegistryPorts.TLS, addr(s.Registry != nil, tls))
	return out
}

// refuse is the error naming every conflict (see conflicts), or nil.
func refuse(conflicts []string) error {
	if len(conflicts) == 0 {
		return nil
	}
	return fmt.Errorf("%s %w", strings.Join(conflicts, ", "), ErrRunningStack)
}

// Nil-safe accessors of the addresses conflicts compares.
func (a *Auctioneer) listen() string {
	if a == nil {
		return ""
	}
	return a.Config.ListenAddress
}

func (a *Auctioneer) debug() string {
	if a == nil {
		return ""
	}
	return a.Config.DebugAddress
}

func (c *Converger) debug() string {
	if c == nil {
		return ""
	}
	return c.Config.DebugAddress
}

func (r *Router) listen() string {
	if r == nil {
		return ""
	}
	return r.Config.ListenAddress
}

func (r *Router) admin() string {
	if r == nil {
		return ""
	}
	return r.Config.AdminAddress
}

func (e *RouteEmitter) listen() string {
	if e == nil {
		return ""
	}
	return e.Config.ListenAddress
}

func (e *RouteEmitter) debug() string {
	if e == nil {
		return ""
	}
	return e.Config.DebugAddress
}

func (f *Fileserver) listen() string {
	if f == nil {
		return ""
	}
	return f.Config.ServerAddress
}

func (f *Fileserver) debug() string {
	if f == nil {
		return ""
	}
	return f.Config.DebugAddress
}

// resize brings the running dev stack to cells cells (both it and cells > 0) without
// touching anything else: new cells get a rep each (started, then waited on until the
// BBS lists them); removed cells, the highest first, are cordoned, evacuated (their
// instances move to the cells that stay), stopped, cleaned off the host and uncordoned.
// The state file is saved before new reps start and after removed ones are gone, so
// that `down` always knows every process.
func (s *Stack) resize(ctx context.Context, cells int, logf func(string, ...any)) error {
	if len(s.Reps) == 0 || s.Reps[0].CellID() != "cell-1" {
		return errors.New("resize: the running stack has no cell-1")
	}
	if cells > len(s.Reps) {
		return s.addCells(ctx, cells, logf)
	}
	return s.removeCells(ctx, cells, logf)
}

// addCells adds cells len(s.Reps)+1 .. cells, laid out like the first.
func (s *Stack) addCells(ctx context.Context, cells int, logf func(string, ...any)) error {
	_, p, err := net.SplitHostPort(s.Reps[0].Config.ListenAddress)
	if err != nil {
		return fmt.Errorf("resize: cell-1's address: %w", err)
	}
	repPort, err := strconv.Atoi(p)
	if err != nil {
		return fmt.Errorf("resize: cell-1's port: %w", err)
	}
	var added []*Rep
	for i := len(s.Reps) + 1; i <= cells; i++ {
		// Reps spread over the BBS replicas, as AddCells does.
		r := s.newRep(devCellLayout(i, repPort), s.BBS[(i-1)%len(s.BBS)].GRPCAddress(), true)
		s.Reps = append(s.Reps, r)
		added = append(added, r)
	}
	var ids []string
	for _, r := range added {
		ids = append(ids, r.CellID())
	}
	if err := s.Certs.EnsureCells(ids); err != nil {
		return err
	}
	if err := s.saveState(); err != nil {
		return err
	}
	for _, r := range added {
		logf("adding %s (grpc %s, debug %s, zone %s)", r.Name, r.Config.ListenAddress, r.Config.DebugAddress, r.Config.Zone)
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	logf("waiting for %d cells to register in the BBS", len(s.Reps))
	return s.WaitForCells(ctx, ComponentStartTimeout)
}

// removeCells removes the cells beyond the first cells.
func (s *Stack) removeCells(ctx context.Context, cells int, logf func(string, ...any)) error {
	removed := s.Reps[cells:]
	c, err := s.Dial(0)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, r := range removed {
		logf("cordoning %s", r.CellID())
		if _, err := c.CordonCell(ctx, &bbsv1.CordonCellRequest{CellId: r.CellID(), Reason: resizeCordonReason}); err != nil {
			return fmt.Errorf("cordon %s: %w", r.CellID(), err)
		}
	}
	errs := make([]error, len(removed))
	var wg sync.WaitGroup
	for i, r := range removed {
		wg.Go(func() { errs[i] = s.evacuate(ctx, r, logf) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, r := range removed {
		if err := s.cleanCell(ctx, r); err != nil {
			return err
		}
		if _, err := c.UncordonCell(ctx, &bbsv1.UncordonCellRequest{CellId: r.CellID()}); err != nil {
			return fmt.Errorf("uncordon %s: %w", r.CellID(), err)
		}
		// The presence of an evacuated rep may outlive it by its TTL.
		if _, err := c.RemoveCell(ctx, &bbsv1.RemoveCellRequest{CellId: r.CellID()}); err != nil {
			logf("removing the presence of %s: %v", r.CellID(), err)
		}
	}
	s.Reps = s.Reps[:cells]
	return s.saveState()
}

// evacuate asks the rep of r to evacuate, as `droverctl evacuate` does, and waits at
// most EvacuationWait for it to exit; then it stops the rep if it still runs.
func (s *Stack) evacuate(ctx context.Context, r *Rep, logf func(string, ...any)) error {
	logf("evacuating %s", r.CellID())
	if err := r.askToEvacuate(ctx); err != nil {
		logf("%s did not take the evacuation request (%v): stopping it", r.CellID(), err)
		return r.Stop(ctx)
	}
	deadline := time.Now().Add(EvacuationWait)
	for r.Running() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(evacuationPoll):
		}
	}
	if r.Running() {
		logf("%s still runs after %s of evacuation: stopping it", r.CellID(), EvacuationWait)
	}
	return r.Stop(ctx)
}

// askToEvacuate calls the rep's Evacuate with the dev client (operator) certificate.
func (r *Rep) askToEvacuate(ctx context.Context) error {
	tlsConf, err := r.Certs.ClientTLS()
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(r.Address(), grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = repv1.NewRepServiceClient(conn).Evacuate(ctx, &repv1.EvacuateRequest{})
	return err
}
