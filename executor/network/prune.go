package network

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Prune tears down every attachment whose guid keep does not keep, and clears what a
// crashed Manager may have left without a record: namespace files and IPAM entries
// (through CNI DEL, which also removes their iptables rules). A nil keep keeps nothing.
// It carries on past a failure and returns every failure. keep must also keep guids whose
// Setup is still running, or Prune tears them down right after.
func (m *Manager) Prune(ctx context.Context, keep func(guid string) bool) error {
	if keep == nil {
		keep = func(string) bool { return false }
	}
	var errs []error
	for _, guid := range m.recordedGuids() {
		if !keep(guid) {
			errs = append(errs, m.Teardown(ctx, guid))
		}
	}
	strays, err := m.strayGuids()
	errs = append(errs, err)
	for _, guid := range strays {
		if !keep(guid) {
			errs = append(errs, m.clearStray(ctx, guid))
		}
	}
	return errors.Join(errs...)
}

// removeAll tears down every attachment for RemoveCell. An attachment whose CNI DEL
// fails still loses its namespace, host ports and record: the bridge plugin refuses a
// second DEL of rules a first one removed (a rep killed in the middle of a teardown), and
// RemoveCell goes on to remove the cell's bridge and every iptables rule naming it, which
// is all a DEL would have removed.
func (m *Manager) removeAll(ctx context.Context) error {
	err := m.Prune(ctx, nil)
	if err == nil {
		return nil
	}
	m.logger.Warn("cell-teardown-incomplete-removing-anyway", "error", err)
	var errs []error
	for _, guid := range m.recordedGuids() {
		m.mu.Lock()
		rec := m.records[guid]
		m.mu.Unlock()
		errs = append(errs, m.forget(rec))
	}
	return errors.Join(errs...)
}

// recordedGuids lists the guids with a record.
func (m *Manager) recordedGuids() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.records))
	for g := range m.records {
		out = append(out, g)
	}
	return out
}

// strayGuids lists container IDs that own a namespace file or a host-local IPAM entry but
// have no record.
func (m *Manager) strayGuids() ([]string, error) {
	found := map[string]bool{}
	var errs []error
	nsEntries, err := os.ReadDir(netnsDir(m.cfg.StateDir))
	if err != nil {
		errs = append(errs, fmt.Errorf("list netns files: %w", err))
	}
	for _, e := range nsEntries {
		found[e.Name()] = true
	}
	ids, err := ipamContainerIDs(filepath.Join(ipamDir(m.cfg.StateDir), networkName(m.cfg.BridgeName)))
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range ids {
		found[id] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for g := range found {
		if _, recorded := m.records[g]; !recorded && validateGuid(g) == nil {
			out = append(out, g)
		}
	}
	return out, errors.Join(errs...)
}

// ipamContainerIDs reads the container IDs of host-local's reservations in dir: one file
// per IP whose first line is the container ID. A missing dir holds none.
func ipamContainerIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list IPAM reservations: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == "lock" || strings.HasPrefix(name, "last_reserved_ip") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue // released meanwhile
		}
		sc := bufio.NewScanner(f)
		if sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				out = append(out, id)
			}
		}
		f.Close()
	}
	return out, nil
}

// clearStray tears down what guid left without a record, unless a record appeared since.
func (m *Manager) clearStray(ctx context.Context, guid string) error {
	unlock := m.guids.Lock(guid)
	defer unlock()
	m.mu.Lock()
	_, recorded := m.records[guid]
	m.mu.Unlock()
	if recorded {
		return nil
	}
	rec := record{Guid: guid, NetnsPath: m.netnsPath(guid)}
	if err := m.detach(ctx, rec); err != nil {
		return fmt.Errorf("network prune stray %q: %w", guid, err)
	}
	m.logger.Info("network-stray-pruned", "guid", guid)
	return nil
}
