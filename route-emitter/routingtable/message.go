// Package routingtable is the route-emitter's pure core: the HTTP routing table keyed by
// (process guid, container port) and the gorouter messages that every change to it
// (a desired or actual update, a BBS event, a full sync) requires. No I/O.
package routingtable

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// RegistryMessage is gorouter's router.register / router.unregister JSON exactly
// (reference/routing.md §1.3).
type RegistryMessage struct {
	Host                 string            `json:"host"`
	Port                 uint32            `json:"port"`
	TLSPort              uint32            `json:"tls_port,omitempty"`
	URIs                 []string          `json:"uris"`
	App                  string            `json:"app,omitempty"`
	RouteServiceURL      string            `json:"route_service_url,omitempty"`
	PrivateInstanceID    string            `json:"private_instance_id,omitempty"`
	PrivateInstanceIndex string            `json:"private_instance_index,omitempty"`
	ServerCertDomainSAN  string            `json:"server_cert_domain_san,omitempty"`
	IsolationSegment     string            `json:"isolation_segment,omitempty"`
	EndpointUpdatedAtNs  int64             `json:"endpoint_updated_at_ns,omitempty"`
	Tags                 map[string]string `json:"tags,omitempty"`
	AvailabilityZone     string            `json:"availability_zone,omitempty"`
	Protocol             string            `json:"protocol,omitempty"`
	Options              json.RawMessage   `json:"options,omitempty"`
}

// CacheKey is the identity of a message for the unregistration cache: host, port,
// tls_port, uris and protocol only (upstream's hash:"ignore" on every other field).
type CacheKey struct {
	Host     string
	Port     uint32
	TLSPort  uint32
	URIs     string
	Protocol string
}

// CacheKey returns m's unregistration-cache identity. The URIs are joined by a NUL
// (which no hostname holds); the usual single URI costs no allocation.
func (m RegistryMessage) CacheKey() CacheKey {
	uris := ""
	if len(m.URIs) == 1 {
		uris = m.URIs[0]
	} else if len(m.URIs) > 1 {
		uris = strings.Join(m.URIs, "\x00")
	}
	return CacheKey{Host: m.Host, Port: m.Port, TLSPort: m.TLSPort, URIs: uris, Protocol: m.Protocol}
}

// sameContent reports whether a and b are equal apart from endpoint_updated_at_ns.
func sameContent(a, b RegistryMessage) bool {
	a.EndpointUpdatedAtNs, b.EndpointUpdatedAtNs = 0, 0
	return reflect.DeepEqual(a, b)
}

// Messages are what a change requires the routers to hear.
type Messages struct {
	Registrations   []RegistryMessage
	Unregistrations []RegistryMessage
	// AddressCollisions counts new endpoints whose host:port another instance held.
	AddressCollisions int
}

// Empty reports whether there is nothing to send.
func (m Messages) Empty() bool { return len(m.Registrations) == 0 && len(m.Unregistrations) == 0 }

// merge appends other to m.
func (m *Messages) merge(other Messages) {
	m.Registrations = append(m.Registrations, other.Registrations...)
	m.Unregistrations = append(m.Unregistrations, other.Unregistrations...)
	m.AddressCollisions += other.AddressCollisions
}

// SortMessages orders messages by uri, host, port, tls port, instance (deterministic output).
func SortMessages(ms []RegistryMessage) {
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		ua, ub := firstURI(a), firstURI(b)
		switch {
		case ua != ub:
			return ua < ub
		case a.Host != b.Host:
			return a.Host < b.Host
		case a.Port != b.Port:
			return a.Port < b.Port
		case a.TLSPort != b.TLSPort:
			return a.TLSPort < b.TLSPort
		default:
			return a.PrivateInstanceID < b.PrivateInstanceID
		}
	})
}

func firstURI(m RegistryMessage) string {
	if len(m.URIs) == 0 {
		return ""
	}
	return m.URIs[0]
}
