package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"drover.dev/executor/firewall"
	"drover.dev/executor/network"
)

// CleanCells removes what the stack's cells left on the host once their reps are
// stopped: every task, container, snapshot and image in their containerd namespaces
// (and the namespaces), their networks (network.RemoveCell: attachments, bridges and
// the iptables rules naming them), their egress firewall tables and the mounts under
// their directories. The executor's state directories go too, so a later start begins
// clean. It does nothing for a rep that still runs.
func (s *Stack) CleanCells(ctx context.Context) error {
	var errs []error
	for _, r := range s.Reps {
		if r.Running() {
			errs = append(errs, fmt.Errorf("clean %s: the rep still runs", r.Name))
			continue
		}
		errs = append(errs, s.cleanCell(ctx, r))
	}
	return errors.Join(errs...)
}

func (s *Stack) cleanCell(ctx context.Context, r *Rep) error {
	var errs []error
	if s.Containerd.Socket != "" {
		if err := s.Containerd.PurgeNamespace(ctx, r.Config.Executor.ContainerdNamespace); err != nil {
			errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
		}
		// The cell's egress firewall table (its containers' chains with it), in the
		// cell host's netns on a multi-host stack.
		if err := inNetns(r.Netns, func() error { // multihost
			return firewall.DeleteTable(firewall.TableName(r.Config.Executor.ContainerdNamespace))
		}); err != nil {
			errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
		}
	}
	// Before the mounts go: the network's namespace files are mounts under the cell.
	if err := inNetns(r.Netns, func() error { // multihost: in the cell host's netns
		return network.RemoveCell(ctx, cellNetwork(r), slog.New(slog.DiscardHandler))
	}); err != nil {
		errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
	}
	if err := unmountUnder(r.Dir); err != nil {
		errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
	}
	if mounts, err := mountsUnder(r.Dir); err == nil && len(mounts) == 0 {
		if err := os.RemoveAll(r.Config.Executor.StateDir); err != nil {
			errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}

// cellNetwork is the network configuration the rep of r gives its executor (its
// network state lives in the executor state dir's "network" directory).
func cellNetwork(r *Rep) network.Config {
	e := r.Config.Executor
	return network.Config{
		StateDir:       filepath.Join(e.StateDir, "network"),
		CNIBinDir:      e.CNIBinDir,
		BridgeName:     e.BridgeName,
		Subnet:         e.Subnet,
		ExternalIP:     e.ExternalIP,
		PortRangeStart: e.PortRangeStart,
		PortRangeEnd:   e.PortRangeEnd,
	}
}

// CellLeftovers lists, one line each, what the cell of r holds on the host beyond its
// bridge itself: tasks and containers in its containerd namespace, what its network
// holds (network.CellLeftovers: netns files, veths on its bridge, iptables rules naming
// it), container chains in its egress firewall table and mounts under its directory. A cell with no instance has none.
func (s *Stack) CellLeftovers(ctx context.Context, r *Rep) ([]string, error) {
	var out []string
	if s.Containerd.Socket != "" {
		items, err := s.Containerd.Leftovers(ctx, r.Config.Executor.ContainerdNamespace)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			out = append(out, "containerd "+r.Config.Executor.ContainerdNamespace+": "+item)
		}
		chains, err := firewall.Leftovers(firewall.TableName(r.Config.Executor.ContainerdNamespace))
		if err != nil {
			return nil, err
		}
		out = append(out, chains...)
	}
	items, err := network.CellLeftovers(cellNetwork(r))
	if err != nil {
		return nil, err
	}
	out = append(out, items...)
	mounts, err := mountsUnder(r.Dir)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		out = append(out, "mount "+m)
	}
	return out, nil
}
