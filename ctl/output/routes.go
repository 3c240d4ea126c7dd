package output

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// RouteEmitterHeader is the one line above the routes table: the emitter's mode,
// whether it is active, its last sync and event, the routers' register interval and
// whether NATS is connected.
func RouteEmitterHeader(r *routeemitterv1.ListRoutesResponse, now time.Time) string {
	mode := r.GetMode()
	if r.GetCellId() != "" {
		mode += " (cell " + r.GetCellId() + ")"
	}
	interval := "none yet"
	if r.GetRegisterIntervalSeconds() > 0 {
		interval = (time.Duration(r.GetRegisterIntervalSeconds()) * time.Second).String()
	}
	nats := "disconnected"
	if r.GetNatsConnected() {
		nats = "connected"
	}
	return fmt.Sprintf("mode: %s  active: %s  last sync: %s  last event: %d  register interval: %s  nats: %s",
		Printable(orNone(mode)), YesNo(r.GetActive()), TimestampWithAge(r.GetLastSyncAt(), now), r.GetLastEventSequence(), interval, nats)
}

// RouteTable lists the routes: hostname, process guid, container port and endpoints.
func RouteTable(routes []*routeemitterv1.Route) *Table {
	t := NewTable("HOSTNAME", "PROCESS_GUID", "PORT", "ENDPOINTS")
	for _, r := range routes {
		t.Add(r.GetHostname(), r.GetProcessGuid(), Int(r.GetContainerPort()), RouteEndpoints(r.GetEndpoints()))
	}
	return t
}

// RouteEndpoints renders endpoints as "host:port#index" separated by commas, with the
// TLS port and a non-ordinary presence when there are ("10.0.0.1:61001#0,
// 10.0.0.2:61002#1 tls:61003 EVACUATING"), or Empty for none.
func RouteEndpoints(eps []*routeemitterv1.RouteEndpoint) string {
	if len(eps) == 0 {
		return Empty
	}
	parts := make([]string, 0, len(eps))
	for _, e := range eps {
		s := net.JoinHostPort(e.GetHost(), strconv.FormatUint(uint64(e.GetPort()), 10)) + "#" + Int(e.GetIndex())
		if e.GetTlsPort() != 0 {
			s += " tls:" + Int(e.GetTlsPort())
		}
		if p := e.GetPresence(); p != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY && p != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED {
			s += " " + models.PresenceName(p)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// Route is the JSON view of one route.
type Route struct {
	Hostname         string          `json:"hostname"`
	ProcessGUID      string          `json:"process_guid"`
	ContainerPort    uint32          `json:"container_port"`
	LogGUID          string          `json:"log_guid,omitempty"`
	Domain           string          `json:"domain,omitempty"`
	RouteServiceURL  string          `json:"route_service_url,omitempty"`
	IsolationSegment string          `json:"isolation_segment,omitempty"`
	Protocol         string          `json:"protocol,omitempty"`
	Endpoints        []RouteEndpoint `json:"endpoints"`
}

// RouteEndpoint is the JSON view of one endpoint; since is RFC 3339.
type RouteEndpoint struct {
	InstanceGUID     string `json:"instance_guid"`
	Index            int32  `json:"index"`
	Host             string `json:"host"`
	Port             uint32 `json:"port"`
	TLSPort          uint32 `json:"tls_port,omitempty"`
	Presence         string `json:"presence"`
	AvailabilityZone string `json:"availability_zone,omitempty"`
	Since            string `json:"since,omitempty"`
}

// RouteView converts a route for JSON output.
func RouteView(r *routeemitterv1.Route) Route {
	v := Route{
		Hostname: r.GetHostname(), ProcessGUID: r.GetProcessGuid(), ContainerPort: r.GetContainerPort(),
		LogGUID: r.GetLogGuid(), Domain: r.GetDomain(), RouteServiceURL: r.GetRouteServiceUrl(),
		IsolationSegment: r.GetIsolationSegment(), Protocol: r.GetProtocol(),
		Endpoints: make([]RouteEndpoint, 0, len(r.GetEndpoints())),
	}
	for _, e := range r.GetEndpoints() {
		v.Endpoints = append(v.Endpoints, RouteEndpoint{
			InstanceGUID: e.GetInstanceGuid(), Index: e.GetIndex(), Host: e.GetHost(), Port: e.GetPort(),
			TLSPort: e.GetTlsPort(), Presence: models.PresenceName(e.GetPresence()),
			AvailabilityZone: e.GetAvailabilityZone(), Since: timestampNano(e.GetSince()),
		})
	}
	return v
}
