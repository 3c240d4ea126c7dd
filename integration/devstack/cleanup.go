package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// CleanCells removes what the stack's cells left on the host once their reps are
// stopped: every task, container, snapshot and image in their containerd namespaces
// (and the namespaces), the mounts under their directories, their bridges with the veths
// on them, and the iptables rules naming their subnets or CNI networks. The executor's
// state directories go too, so a later start begins clean. It does nothing for a rep
// that still runs.
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
	}
	if err := unmountUnder(r.Dir); err != nil {
		errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
	}
	if err := removeBridge(ctx, r.Config.Executor.BridgeName); err != nil {
		errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
	}
	if err := removeCellIptables(ctx, r.Config.Executor.Subnet, r.Config.Executor.BridgeName); err != nil {
		errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
	}
	if mounts, err := mountsUnder(r.Dir); err == nil && len(mounts) == 0 {
		if err := os.RemoveAll(r.Config.Executor.StateDir); err != nil {
			errs = append(errs, fmt.Errorf("clean %s: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}

// CellLeftovers lists, one line each, what the cell of r holds on the host beyond its
// bridge itself: tasks and containers in its containerd namespace, netns files under its
// directory, veths on its bridge, iptables rules naming its subnet or CNI network, and
// mounts under its directory. A cell with no instance has none.
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
	}
	for _, f := range netnsFiles(r.Dir) {
		out = append(out, "netns file "+f)
	}
	for _, port := range bridgePorts(r.Config.Executor.BridgeName) {
		out = append(out, "veth "+port+" on bridge "+r.Config.Executor.BridgeName)
	}
	rules, err := cellIptablesRules(ctx, r.Config.Executor.Subnet, r.Config.Executor.BridgeName)
	if err != nil {
		return nil, err
	}
	for _, rule := range rules {
		out = append(out, "iptables -t "+rule.Table+" "+rule.Line)
	}
	mounts, err := mountsUnder(r.Dir)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		out = append(out, "mount "+m)
	}
	return out, nil
}
