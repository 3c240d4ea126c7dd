package containerd

import (
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// applyFirewall applies a new container's egress rules and, when they are in place,
// reports how long that took to Config.ObserveFirewallSetup.
func (r *Runtime) applyFirewall(guid, ip string, rules []*modelsv1.EgressRule) error {
	start := time.Now()
	if err := r.fw.Apply(guid, ip, rules); err != nil {
		return err
	}
	if observe := r.cfg.ObserveFirewallSetup; observe != nil {
		observe(time.Since(start))
	}
	return nil
}

// restoreFirewall, after a restart, drops the egress rules of containers that are gone
// (the firewall rebuilt the rest from its records when it was made) and gives a running
// container without a record (made before the firewall existed) the cell's default rules.
func (r *Runtime) restoreFirewall(owned map[string]bool) error {
	if err := r.fw.Restore(func(guid string) bool { return owned[guid] }); err != nil {
		return err
	}
	for guid := range owned {
		if r.fw.Has(guid) {
			continue
		}
		att, ok := r.net.Lookup(guid)
		if !ok {
			continue
		}
		r.logger.Warn("firewall-record-missing-applying-defaults", "guid", guid)
		if err := r.fw.Apply(guid, att.InternalIP, nil); err != nil {
			return err
		}
	}
	return nil
}
