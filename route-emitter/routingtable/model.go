package routingtable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// CFRouterKey is the DesiredLRP routes key holding HTTP routes.
const CFRouterKey = "cf-router"

// Tag is a modification tag: an epoch and an index increasing within it.
type Tag struct {
	Epoch string `json:"epoch,omitempty"`
	Index uint32 `json:"index,omitempty"`
}

// tagOf converts a proto modification tag.
func tagOf(t *modelsv1.ModificationTag) Tag {
	return Tag{Epoch: t.GetEpoch(), Index: t.GetIndex()}
}

// SucceededBy reports whether next is newer than t: t is unset, the epochs differ, or
// next has a greater index in the same epoch.
func (t Tag) SucceededBy(next Tag) bool {
	if t.Epoch == "" || t.Epoch != next.Epoch {
		return true
	}
	return next.Index > t.Index
}

// Route is one cf-router entry: hostnames served by one container port.
type Route struct {
	Hostnames        []string        `json:"hostnames"`
	Port             uint32          `json:"port"`
	RouteServiceURL  string          `json:"route_service_url,omitempty"`
	IsolationSegment string          `json:"isolation_segment,omitempty"`
	Protocol         string          `json:"protocol,omitempty"`
	Options          json.RawMessage `json:"options,omitempty"`
}

// MetricTag is a DesiredLRP metric tag: a static value or a dynamic one.
type MetricTag struct {
	Static  string                          `json:"static,omitempty"`
	Dynamic modelsv1.MetricTagValue_Dynamic `json:"dynamic,omitempty"`
}

// Desired is what the table keeps of a DesiredLRP.
type Desired struct {
	ProcessGUID string               `json:"process_guid"`
	Domain      string               `json:"domain,omitempty"`
	LogGUID     string               `json:"log_guid,omitempty"`
	Instances   int32                `json:"instances"`
	Routes      []Route              `json:"routes,omitempty"`
	Tag         Tag                  `json:"tag"`
	MetricTags  map[string]MetricTag `json:"metric_tags,omitempty"`
	// KeptRoutes marks a version a sync merged with routes of an older one (a stale
	// domain): the BBS's version with the same tag replaces it (a replayed event that
	// arrives after the sync must not be ignored as "not newer").
	KeptRoutes bool `json:"kept_routes,omitempty"`
}

// replacedBy reports whether next replaces d: next is newer, or d kept older routes
// and next is the same version without them.
func (d *Desired) replacedBy(next Desired) bool {
	return d.Tag.SucceededBy(next.Tag) || (d.KeptRoutes && d.Tag == next.Tag)
}

// Actual is what the table keeps of one ActualLRP row.
type Actual struct {
	ProcessGUID      string                     `json:"process_guid"`
	Index            int32                      `json:"index"`
	Presence         modelsv1.ActualLRPPresence `json:"presence"`
	InstanceGUID     string                     `json:"instance_guid,omitempty"`
	CellID           string                     `json:"cell_id,omitempty"`
	State            modelsv1.ActualLRPState    `json:"state"`
	Routable         bool                       `json:"routable,omitempty"`
	Address          string                     `json:"address,omitempty"`
	InstanceAddress  string                     `json:"instance_address,omitempty"`
	PreferInstance   bool                       `json:"prefer_instance,omitempty"`
	Ports            []*PortMapping             `json:"ports,omitempty"`
	Since            int64                      `json:"since,omitempty"`
	AvailabilityZone string                     `json:"availability_zone,omitempty"`
	Tag              Tag                        `json:"tag"`
}

// PortMapping maps a container port to the host's ports.
type PortMapping struct {
	ContainerPort         uint32 `json:"container_port"`
	HostPort              uint32 `json:"host_port,omitempty"`
	ContainerTLSProxyPort uint32 `json:"container_tls_proxy_port,omitempty"`
	HostTLSProxyPort      uint32 `json:"host_tls_proxy_port,omitempty"`
}

// serves reports whether the row contributes endpoints: RUNNING and routable.
func (a *Actual) serves() bool {
	return a.State == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING && a.Routable
}

// address is where routers reach container port p: the host address and host ports, or
// the container's address and ports when the instance prefers it.
func (a *Actual) address(p uint32) (host string, port, tlsPort uint32, ok bool) {
	for _, m := range a.Ports {
		if m.ContainerPort != p {
			continue
		}
		if a.PreferInstance {
			return a.InstanceAddress, m.ContainerPort, m.ContainerTLSProxyPort, a.InstanceAddress != ""
		}
		return a.Address, m.HostPort, m.HostTLSProxyPort, a.Address != "" && (m.HostPort != 0 || m.HostTLSProxyPort != 0)
	}
	return "", 0, 0, false
}

// DesiredFromLRP converts a DesiredLRP. A malformed cf-router entry is reported and
// left out; the rest is kept.
func DesiredFromLRP(d *modelsv1.DesiredLRP) (Desired, error) {
	return desiredOf(d.GetProcessGuid(), d.GetDomain(), d.GetLogGuid(), d.GetInstances(), d.GetRoutes(), d.GetModificationTag(), d.GetMetricTags())
}

// DesiredFromRoutingInfo converts a DesiredLRPRoutingInfo (as DesiredFromLRP).
func DesiredFromRoutingInfo(d *modelsv1.DesiredLRPRoutingInfo) (Desired, error) {
	return desiredOf(d.GetProcessGuid(), d.GetDomain(), d.GetLogGuid(), d.GetInstances(), d.GetRoutes(), d.GetModificationTag(), d.GetMetricTags())
}

func desiredOf(guid, domain, logGUID string, instances int32, routes map[string]*structpb.Value, tag *modelsv1.ModificationTag, tags map[string]*modelsv1.MetricTagValue) (Desired, error) {
	d := Desired{ProcessGUID: guid, Domain: domain, LogGUID: logGUID, Instances: instances, Tag: tagOf(tag)}
	if len(tags) > 0 {
		d.MetricTags = make(map[string]MetricTag, len(tags))
		for k, v := range tags {
			d.MetricTags[k] = MetricTag{Static: v.GetStatic(), Dynamic: v.GetDynamic()}
		}
	}
	var err error
	d.Routes, err = ParseCFRoutes(routes[CFRouterKey])
	if err != nil {
		err = fmt.Errorf("desired lrp %s: %w", guid, err)
	}
	return d, err
}

// ParseCFRoutes reads the cf-router value: a list of {hostnames, port, ...}. Entries
// that are not objects of that shape, or have no port, are skipped and reported.
func ParseCFRoutes(v *structpb.Value) ([]Route, error) {
	if v == nil {
		return nil, nil
	}
	list := v.GetListValue()
	if list == nil {
		return nil, errors.New("routes.cf-router: must be a list")
	}
	var routes []Route
	var errs []error
	for i, item := range list.GetValues() {
		raw, err := json.Marshal(item.AsInterface())
		if err != nil {
			errs = append(errs, fmt.Errorf("routes.cf-router[%d]: %w", i, err))
			continue
		}
		var r Route
		if err := json.Unmarshal(raw, &r); err != nil {
			errs = append(errs, fmt.Errorf("routes.cf-router[%d]: %w", i, err))
			continue
		}
		if r.Port == 0 {
			errs = append(errs, fmt.Errorf("routes.cf-router[%d].port: is required", i))
			continue
		}
		if string(r.Options) == "null" {
			r.Options = nil
		}
		routes = append(routes, r)
	}
	return routes, errors.Join(errs...)
}

// ActualFromLRP converts an ActualLRP row.
func ActualFromLRP(a *modelsv1.ActualLRP) Actual {
	act := Actual{
		ProcessGUID: a.GetProcessGuid(), Index: a.GetIndex(), Presence: a.GetPresence(),
		InstanceGUID: a.GetInstanceGuid(), CellID: a.GetCellId(),
		State: a.GetState(), Routable: a.GetRoutable(), Since: a.GetSince(),
		AvailabilityZone: a.GetAvailabilityZone(), Tag: tagOf(a.GetModificationTag()),
	}
	act.setNetInfo(a.GetNetInfo())
	return act
}

// ActualFromInfo builds an ActualLRP row from a changed event's key, instance key and
// info (before or after).
func ActualFromInfo(key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, info *modelsv1.ActualLRPInfo) Actual {
	act := Actual{
		ProcessGUID: key.GetProcessGuid(), Index: key.GetIndex(), Presence: info.GetPresence(),
		InstanceGUID: ik.GetInstanceGuid(), CellID: ik.GetCellId(),
		State: info.GetState(), Routable: info.GetRoutable(), Since: info.GetSince(),
		AvailabilityZone: info.GetAvailabilityZone(), Tag: tagOf(info.GetModificationTag()),
	}
	act.setNetInfo(info.GetNetInfo())
	return act
}

func (a *Actual) setNetInfo(n *modelsv1.ActualLRPNetInfo) {
	a.Address = n.GetAddress()
	a.InstanceAddress = n.GetInstanceAddress()
	a.PreferInstance = n.GetPreferredAddress() == modelsv1.PreferredAddress_PREFERRED_ADDRESS_INSTANCE
	for _, p := range n.GetPorts() {
		a.Ports = append(a.Ports, &PortMapping{
			ContainerPort: p.GetContainerPort(), HostPort: p.GetHostPort(),
			ContainerTLSProxyPort: p.GetContainerTlsProxyPort(), HostTLSProxyPort: p.GetHostTlsProxyPort(),
		})
	}
}

// equal reports whether d and o (either may be nil) hold the same values.
func (d *Desired) equal(o *Desired) bool {
	if d == nil || o == nil {
		return d == o
	}
	if d.ProcessGUID != o.ProcessGUID || d.Domain != o.Domain || d.LogGUID != o.LogGUID || d.Instances != o.Instances ||
		d.Tag != o.Tag || d.KeptRoutes != o.KeptRoutes || len(d.Routes) != len(o.Routes) || !maps.Equal(d.MetricTags, o.MetricTags) {
		return false
	}
	for i := range d.Routes {
		if !d.Routes[i].equal(&o.Routes[i]) {
			return false
		}
	}
	return true
}

// equal reports whether r and o hold the same values.
func (r *Route) equal(o *Route) bool {
	return slices.Equal(r.Hostnames, o.Hostnames) && r.Port == o.Port && r.RouteServiceURL == o.RouteServiceURL &&
		r.IsolationSegment == o.IsolationSegment && r.Protocol == o.Protocol && bytes.Equal(r.Options, o.Options)
}

// equal reports whether a and o (either may be nil) hold the same values.
func (a *Actual) equal(o *Actual) bool {
	if a == nil || o == nil {
		return a == o
	}
	if a.ProcessGUID != o.ProcessGUID || a.Index != o.Index || a.Presence != o.Presence || a.InstanceGUID != o.InstanceGUID ||
		a.CellID != o.CellID || a.State != o.State || a.Routable != o.Routable || a.Address != o.Address ||
		a.InstanceAddress != o.InstanceAddress || a.PreferInstance != o.PreferInstance || a.Since != o.Since ||
		a.AvailabilityZone != o.AvailabilityZone || a.Tag != o.Tag || len(a.Ports) != len(o.Ports) {
		return false
	}
	for i := range a.Ports {
		x, y := a.Ports[i], o.Ports[i]
		if x != y && (x == nil || y == nil || *x != *y) {
			return false
		}
	}
	return true
}
