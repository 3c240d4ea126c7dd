package firewall

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Names inside a cell's table.
const (
	mapName      = "containers"
	chainPrefix  = "ctr-"
	forwardChain = "forward"
	inputChain   = "input"
)

// validName is what a table, bridge or guid may look like (as the network package and
// CNI accept container IDs); it keeps every nftables name printable and short.
var validName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]{0,127}$`)

// Config is one cell's firewall.
type Config struct {
	// Table is the cell's nftables table (family inet), e.g. "drover-" + the cell's
	// containerd namespace: two cells on one host need two tables.
	Table string
	// Bridge is the cell's container bridge: traffic arriving from it is filtered.
	Bridge string
	// StateDir keeps one record per container, for Restore.
	StateDir string
	// DefaultRules apply to every container, before (so with lower precedence than)
	// its own rules; e.g. DNS.
	DefaultRules []*modelsv1.EgressRule
}

// Firewall applies and removes containers' egress rules in one cell's table. It is safe
// for concurrent use.
type Firewall struct {
	cfg      Config
	defaults []Rule
	logger   *slog.Logger
	store    recordStore

	mu      sync.Mutex
	records map[string]record
}

// New validates cfg, loads the records an earlier Firewall left in cfg.StateDir and
// rebuilds the cell's table from them in one atomic batch: the chains of recorded
// containers are back (with the current default rules), anything else is gone.
func New(cfg Config, logger *slog.Logger) (*Firewall, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if !validName.MatchString(cfg.Table) {
		errs = append(errs, fmt.Errorf("firewall config: table %q must be 1-128 letters, digits, '_', '.' or '-'", cfg.Table))
	}
	if !validName.MatchString(cfg.Bridge) || len(cfg.Bridge) > 15 {
		errs = append(errs, fmt.Errorf("firewall config: bridge %q must be an interface name", cfg.Bridge))
	}
	if !filepath.IsAbs(cfg.StateDir) {
		errs = append(errs, fmt.Errorf("firewall config: state_dir %q must be an absolute path", cfg.StateDir))
	}
	defaults, err := Parse("default_egress_rules", cfg.DefaultRules)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	store, err := newRecordStore(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	f := &Firewall{cfg: cfg, defaults: defaults, logger: logger.With("table", cfg.Table), store: store, records: map[string]record{}}
	recs, problems := store.loadAll()
	for _, p := range problems {
		f.logger.Warn("firewall-record-unreadable", "error", p)
	}
	for _, r := range recs {
		f.records[r.Guid] = r
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.rebuildLocked(); err != nil {
		return nil, err
	}
	f.logger.Info("firewall-loaded", "containers", len(f.records))
	if b, err := os.ReadFile(brNetfilterSysctl); err != nil || strings.TrimSpace(string(b)) != "1" {
		// Without br_netfilter, traffic between two containers on the bridge is switched
		// and never reaches the inet forward hook.
		f.logger.Warn("firewall-container-to-container-unfiltered", "reason", "br_netfilter is not loaded or "+brNetfilterSysctl+" is not 1")
	}
	return f, nil
}

// brNetfilterSysctl is on when bridged IPv4 traffic passes the inet hooks.
const brNetfilterSysctl = "/proc/sys/net/bridge/bridge-nf-call-iptables"

func (f *Firewall) table() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyINet, Name: f.cfg.Table}
}

// ChainName is the nftables chain of a container.
func ChainName(guid string) string { return chainPrefix + guid }

// Apply sets guid's egress rules (after the cell's defaults) for traffic from ip, in
// one atomic batch; applying again replaces them. Bad rules change nothing and the
// error names each bad field.
func (f *Firewall) Apply(guid, ip string, rules []*modelsv1.EgressRule) error {
	start := time.Now()
	if !validName.MatchString(guid) {
		return fmt.Errorf("firewall: guid %q must be 1-128 letters, digits, '_', '.' or '-'", guid)
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil || !addr.Is4() {
		return fmt.Errorf("firewall: container address %q of %s is not IPv4", ip, guid)
	}
	own, err := Parse("egress_rules", rules)
	if err != nil {
		return fmt.Errorf("firewall %s: %w", guid, err)
	}
	rec := record{Guid: guid, IP: addr, Rules: own}
	exprs, err := Compile(guid, addr, f.all(own))
	if err != nil {
		return fmt.Errorf("firewall %s: %w", guid, err)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("firewall: netlink: %w", err)
	}
	t, m := f.table(), f.containerMap()
	var stale []string
	for g, r := range f.records {
		if g != guid && r.IP == addr {
			// The address went to guid: a leftover of a container gone.
			stale = append(stale, g)
			f.delContainer(c, m, r)
		}
	}
	if old, ok := f.records[guid]; ok && old.IP != addr {
		f.delContainer(c, m, old)
	}
	if err := f.store.save(rec); err != nil {
		return err
	}
	f.addContainer(c, t, m, rec, exprs)
	if err := c.Flush(); err != nil {
		if old, ok := f.records[guid]; ok {
			_ = f.store.save(old)
		} else {
			_ = f.store.remove(guid)
		}
		return fmt.Errorf("firewall %s: apply rules: %w", guid, err)
	}
	for _, g := range stale {
		delete(f.records, g)
		_ = f.store.remove(g)
	}
	f.records[guid] = rec
	f.logger.Info("firewall-applied", "guid", guid, "ip", ip, "rules", len(own), "nft-rules", len(exprs), "duration", time.Since(start))
	return nil
}

// Remove deletes guid's chain and map entry. Removing what is not there succeeds.
func (f *Firewall) Remove(guid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec, ok := f.records[guid]
	if !ok {
		return nil
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("firewall: netlink: %w", err)
	}
	f.delContainer(c, f.containerMap(), rec)
	if err := c.Flush(); err != nil {
		// Not what the records say (changed by hand?): rebuild the table without it.
		f.logger.Warn("firewall-remove-failed-rebuilding", "guid", guid, "error", err)
		delete(f.records, guid)
		if err := f.rebuildLocked(); err != nil {
			f.records[guid] = rec
			return fmt.Errorf("firewall %s: remove: %w", guid, err)
		}
	}
	delete(f.records, guid)
	if err := f.store.remove(guid); err != nil {
		return err
	}
	f.logger.Info("firewall-removed", "guid", guid)
	return nil
}

// Restore removes the rules of every recorded container keep does not keep (a nil keep
// keeps nothing), after a restart.
func (f *Firewall) Restore(keep func(guid string) bool) error {
	var errs []error
	for _, g := range f.Guids() {
		if keep == nil || !keep(g) {
			errs = append(errs, f.Remove(g))
		}
	}
	return errors.Join(errs...)
}

// Guids lists the containers with rules.
func (f *Firewall) Guids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.records))
	for g := range f.records {
		out = append(out, g)
	}
	return out
}

// Has reports whether guid has rules.
func (f *Firewall) Has(guid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.records[guid]
	return ok
}

// Delete removes the cell's whole table (for a cell that goes away for good) and every
// record. A missing table is fine.
func (f *Firewall) Delete() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("firewall: netlink: %w", err)
	}
	if exists, err := f.tableExists(c); err != nil {
		return err
	} else if exists {
		c.DelTable(f.table())
		if err := c.Flush(); err != nil {
			return fmt.Errorf("firewall: delete table %s: %w", f.cfg.Table, err)
		}
	}
	var errs []error
	for g := range f.records {
		errs = append(errs, f.store.remove(g))
		delete(f.records, g)
	}
	return errors.Join(errs...)
}

// all is the cell's defaults followed by a container's own rules.
func (f *Firewall) all(own []Rule) []Rule {
	return append(append(make([]Rule, 0, len(f.defaults)+len(own)), f.defaults...), own...)
}

// containerMap is the verdict map from a container's address to its chain.
func (f *Firewall) containerMap() *nftables.Set {
	return &nftables.Set{Table: f.table(), Name: mapName, IsMap: true, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict}
}

// addContainer queues guid's chain (created or flushed), its rules and its map entry.
func (f *Firewall) addContainer(c *nftables.Conn, t *nftables.Table, m *nftables.Set, rec record, exprs [][]expr.Any) {
	ch := c.AddChain(&nftables.Chain{Table: t, Name: ChainName(rec.Guid)})
	c.FlushChain(ch)
	for _, e := range exprs {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: e})
	}
	ip := rec.IP.As4()
	// SetAddElements only fails on elements it cannot encode; these are fixed-size.
	_ = c.SetAddElements(m, []nftables.SetElement{{Key: ip[:], VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}}})
}

// delContainer queues the removal of rec's map entry and chain.
func (f *Firewall) delContainer(c *nftables.Conn, m *nftables.Set, rec record) {
	ip := rec.IP.As4()
	_ = c.SetDeleteElements(m, []nftables.SetElement{{Key: ip[:]}})
	ch := &nftables.Chain{Table: f.table(), Name: ChainName(rec.Guid)}
	c.FlushChain(ch)
	c.DelChain(ch)
}

// tableExists reports whether the cell's table is there.
func (f *Firewall) tableExists(c *nftables.Conn) (bool, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("firewall: list tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == f.cfg.Table {
			return true, nil
		}
	}
	return false, nil
}

// rebuildLocked replaces the cell's table, in one atomic batch, with one built from the
// records: base chains, the map, and each recorded container's chain. A record whose
// rules no longer compile (e.g. a bound lowered) is dropped with an error log.
func (f *Firewall) rebuildLocked() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("firewall: netlink: %w", err)
	}
	exists, err := f.tableExists(c)
	if err != nil {
		return err
	}
	t := f.table()
	if exists {
		c.DelTable(t)
	}
	c.AddTable(t)
	type compiled struct {
		rec   record
		exprs [][]expr.Any
	}
	var ctrs []compiled
	for g, r := range f.records {
		exprs, err := Compile(g, r.IP, f.all(r.Rules))
		if err != nil {
			f.logger.Error("firewall-record-dropped", "guid", g, "error", err)
			delete(f.records, g)
			_ = f.store.remove(g)
			continue
		}
		ctrs = append(ctrs, compiled{r, exprs})
	}
	m := f.containerMap()
	// Chains first: the map's entries jump to them.
	for _, ct := range ctrs {
		ch := c.AddChain(&nftables.Chain{Table: t, Name: ChainName(ct.rec.Guid)})
		for _, e := range ct.exprs {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: e})
		}
	}
	if err := c.AddSet(m, nil); err != nil {
		return fmt.Errorf("firewall: map: %w", err)
	}
	for _, ct := range ctrs {
		ip := ct.rec.IP.As4()
		_ = c.SetAddElements(m, []nftables.SetElement{{Key: ip[:], VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ChainName(ct.rec.Guid)}}})
	}
	accept := nftables.ChainPolicyAccept
	for _, base := range []struct {
		name string
		hook *nftables.ChainHook
	}{{forwardChain, nftables.ChainHookForward}, {inputChain, nftables.ChainHookInput}} {
		ch := c.AddChain(&nftables.Chain{Table: t, Name: base.name, Hooknum: base.hook,
			Priority: nftables.ChainPriorityFilter, Type: nftables.ChainTypeFilter, Policy: &accept})
		for _, e := range dispatch(f.cfg.Bridge, m.Name, m.ID) {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: e})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("firewall: build table %s: %w", f.cfg.Table, err)
	}
	return nil
}

// TableName is the table of the cell whose containerd namespace is namespace.
func TableName(namespace string) string { return "drover-" + namespace }

// DeleteTable removes a cell's whole table, for a cell that goes away for good (its
// records go with its state dir). A missing table is fine.
func DeleteTable(table string) error {
	f := &Firewall{cfg: Config{Table: table}}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("firewall: netlink: %w", err)
	}
	exists, err := f.tableExists(c)
	if err != nil || !exists {
		return err
	}
	c.DelTable(f.table())
	if err := c.Flush(); err != nil {
		return fmt.Errorf("firewall: delete table %s: %w", table, err)
	}
	return nil
}

// Leftovers lists the container chains left in a cell's table, one line each ("nftables
// chain inet TABLE ctr-GUID"); a cell with no container has none.
func Leftovers(table string) ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("firewall: netlink: %w", err)
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("firewall: list chains: %w", err)
	}
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == table && strings.HasPrefix(ch.Name, chainPrefix) {
			out = append(out, "nftables chain inet "+table+" "+ch.Name)
		}
	}
	return out, nil
}
