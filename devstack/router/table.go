package router

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Endpoint is one backend of a URI, keyed in its pool by Address (host:port, with the
// TLS port when there is one, as gorouter's canonical address).
type Endpoint struct {
	Address           string    `json:"address"`
	Host              string    `json:"host"`
	Port              uint32    `json:"port"`
	TLSPort           uint32    `json:"tls_port,omitempty"`
	App               string    `json:"app,omitempty"`
	PrivateInstanceID string    `json:"private_instance_id,omitempty"`
	Index             string    `json:"private_instance_index,omitempty"`
	AvailabilityZone  string    `json:"availability_zone,omitempty"`
	ServerCertSAN     string    `json:"server_cert_domain_san,omitempty"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// TLS reports whether the endpoint was registered with a tls_port: gorouter never
// prunes those by age.
func (e Endpoint) TLS() bool { return e.TLSPort != 0 }

// Table is gorouter's route table in miniature: URI → endpoints by address. Register
// adds or refreshes, Unregister removes, Prune drops non-TLS endpoints not refreshed
// within the threshold. It does no I/O and is not safe for concurrent use.
type Table struct {
	pools map[string]map[string]Endpoint
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{pools: map[string]map[string]Endpoint{}} }

// Validate checks what gorouter requires of a registry message: a host, a port or TLS
// port that fits 16 bits, at least one URI, and an https route service URL if any.
func (m RegistryMessage) Validate() error {
	var errs []error
	if m.Host == "" {
		errs = append(errs, errors.New("host: required"))
	}
	port := m.Port
	if m.TLSPort != 0 {
		port = m.TLSPort
	}
	if port == 0 || port > 65535 {
		errs = append(errs, fmt.Errorf("port/tls_port: want 1-65535, got port %d tls_port %d", m.Port, m.TLSPort))
	}
	if len(m.URIs) == 0 {
		errs = append(errs, errors.New("uris: at least one required"))
	}
	if m.RouteServiceURL != "" && !strings.HasPrefix(m.RouteServiceURL, "https") {
		errs = append(errs, fmt.Errorf("route_service_url: must be https, got %q", m.RouteServiceURL))
	}
	return errors.Join(errs...)
}

// address is gorouter's canonical address of the message's endpoint.
func (m RegistryMessage) address() string {
	port := m.Port
	if m.TLSPort != 0 {
		port = m.TLSPort
	}
	return net.JoinHostPort(m.Host, strconv.FormatUint(uint64(port), 10))
}

// NormalizeURI lowercases a URI and drops a trailing slash, as gorouter keys its pools.
func NormalizeURI(uri string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(uri)), "/")
}

// Register adds the message's endpoint to each of its URIs, or refreshes it (and its
// fields) when the address is known. It returns how many endpoints were new.
func (t *Table) Register(m RegistryMessage, now time.Time) (added int, err error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	ep := Endpoint{
		Address: m.address(), Host: m.Host, Port: m.Port, TLSPort: m.TLSPort, App: m.App,
		PrivateInstanceID: m.PrivateInstanceID, Index: m.PrivateInstanceIndex,
		AvailabilityZone: m.AvailabilityZone, ServerCertSAN: m.ServerCertDomainSAN, UpdatedAt: now,
	}
	for _, uri := range m.URIs {
		uri = NormalizeURI(uri)
		pool := t.pools[uri]
		if pool == nil {
			pool = map[string]Endpoint{}
			t.pools[uri] = pool
		}
		if _, ok := pool[ep.Address]; !ok {
			added++
		}
		pool[ep.Address] = ep
	}
	return added, nil
}

// Unregister removes the message's address from each of its URIs and returns how many
// endpoints were removed; an empty pool disappears.
func (t *Table) Unregister(m RegistryMessage) (removed int, err error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	addr := m.address()
	for _, uri := range m.URIs {
		uri = NormalizeURI(uri)
		pool := t.pools[uri]
		if _, ok := pool[addr]; !ok {
			continue
		}
		delete(pool, addr)
		removed++
		if len(pool) == 0 {
			delete(t.pools, uri)
		}
	}
	return removed, nil
}

// Prune removes every non-TLS endpoint last registered more than threshold before now
// and returns the pruned "uri address" pairs, sorted.
func (t *Table) Prune(now time.Time, threshold time.Duration) []string {
	var pruned []string
	for uri, pool := range t.pools {
		for addr, ep := range pool {
			if ep.TLS() || now.Sub(ep.UpdatedAt) <= threshold {
				continue
			}
			delete(pool, addr)
			pruned = append(pruned, uri+" "+addr)
		}
		if len(pool) == 0 {
			delete(t.pools, uri)
		}
	}
	sort.Strings(pruned)
	return pruned
}

// Lookup returns the endpoints of the pool that serves host and path, sorted by address,
// and the URI of that pool: the longest URI "host/prefix" whose prefix starts path, else
// the bare host. The host's port, if any, is ignored.
func (t *Table) Lookup(host, path string) (uri string, endpoints []Endpoint) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = NormalizeURI(host)
	candidate := host + strings.TrimSuffix(strings.ToLower(path), "/")
	for {
		if pool, ok := t.pools[candidate]; ok {
			return candidate, sortedEndpoints(pool)
		}
		i := strings.LastIndexByte(candidate, '/')
		if i < 0 {
			return "", nil
		}
		candidate = candidate[:i]
	}
}

// Routes returns a copy of the table: URI → endpoints sorted by address.
func (t *Table) Routes() map[string][]Endpoint {
	out := make(map[string][]Endpoint, len(t.pools))
	for uri, pool := range t.pools {
		out[uri] = sortedEndpoints(pool)
	}
	return out
}

// Len is the number of (URI, endpoint) pairs.
func (t *Table) Len() int {
	n := 0
	for _, pool := range t.pools {
		n += len(pool)
	}
	return n
}

func sortedEndpoints(pool map[string]Endpoint) []Endpoint {
	out := make([]Endpoint, 0, len(pool))
	for _, ep := range pool {
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}
