package router

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func reg(host string, port, tlsPort uint32, uris ...string) RegistryMessage {
	return RegistryMessage{Host: host, Port: port, TLSPort: tlsPort, URIs: uris}
}

func TestTableRegisterUnregister(t *testing.T) {
	type op struct {
		unregister bool
		msg        RegistryMessage
		at         time.Duration
		want       int // endpoints added or removed
		wantErr    string
	}
	tests := []struct {
		name string
		ops  []op
		want map[string][]string // uri → addresses
	}{
		{
			name: "register adds one endpoint per uri",
			ops:  []op{{msg: reg("10.0.0.1", 61000, 0, "a.example.com", "B.example.com/"), want: 2}},
			want: map[string][]string{"a.example.com": {"10.0.0.1:61000"}, "b.example.com": {"10.0.0.1:61000"}},
		},
		{
			name: "a second register of the same address refreshes, adds nothing",
			ops: []op{
				{msg: reg("10.0.0.1", 61000, 0, "a.example.com"), want: 1},
				{msg: reg("10.0.0.1", 61000, 0, "a.example.com"), at: time.Second, want: 0},
			},
			want: map[string][]string{"a.example.com": {"10.0.0.1:61000"}},
		},
		{
			name: "the tls port is the address when set",
			ops:  []op{{msg: reg("10.0.0.1", 61000, 61001, "a.example.com"), want: 1}},
			want: map[string][]string{"a.example.com": {"10.0.0.1:61001"}},
		},
		{
			name: "unregister removes the address, an empty pool goes",
			ops: []op{
				{msg: reg("10.0.0.1", 61000, 0, "a.example.com"), want: 1},
				{msg: reg("10.0.0.2", 61000, 0, "a.example.com", "b.example.com"), want: 2},
				{unregister: true, msg: reg("10.0.0.2", 61000, 0, "a.example.com", "b.example.com"), want: 2},
			},
			want: map[string][]string{"a.example.com": {"10.0.0.1:61000"}},
		},
		{
			name: "unregister of an unknown address removes nothing",
			ops: []op{
				{msg: reg("10.0.0.1", 61000, 0, "a.example.com"), want: 1},
				{unregister: true, msg: reg("10.0.0.1", 61001, 0, "a.example.com"), want: 0},
				{unregister: true, msg: reg("10.0.0.1", 61000, 0, "other.example.com"), want: 0},
			},
			want: map[string][]string{"a.example.com": {"10.0.0.1:61000"}},
		},
		{
			name: "invalid messages are refused",
			ops: []op{
				{msg: reg("", 61000, 0, "a.example.com"), wantErr: "host: required"},
				{msg: reg("10.0.0.1", 0, 0, "a.example.com"), wantErr: "port/tls_port"},
				{msg: reg("10.0.0.1", 70000, 0, "a.example.com"), wantErr: "port/tls_port"},
				{msg: reg("10.0.0.1", 61000, 0), wantErr: "uris: at least one"},
				{msg: RegistryMessage{Host: "h", Port: 1, URIs: []string{"a"}, RouteServiceURL: "http://rs"}, wantErr: "route_service_url: must be https"},
				{unregister: true, msg: reg("10.0.0.1", 61000, 0), wantErr: "uris"},
			},
			want: map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := NewTable()
			for i, o := range tt.ops {
				var n int
				var err error
				if o.unregister {
					n, err = tab.Unregister(o.msg)
				} else {
					n, err = tab.Register(o.msg, t0.Add(o.at))
				}
				if o.wantErr != "" {
					require.ErrorContains(t, err, o.wantErr, "op %d", i)
					continue
				}
				require.NoError(t, err, "op %d", i)
				require.Equal(t, o.want, n, "op %d", i)
			}
			got := map[string][]string{}
			for uri, eps := range tab.Routes() {
				for _, ep := range eps {
					got[uri] = append(got[uri], ep.Address)
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTableRegisterKeepsFieldsAndRefreshTime(t *testing.T) {
	tab := NewTable()
	m := RegistryMessage{Host: "10.0.0.1", Port: 61000, URIs: []string{"a.example.com"}, App: "log-1",
		PrivateInstanceID: "ig-1", PrivateInstanceIndex: "3", AvailabilityZone: "z1", ServerCertDomainSAN: "ig-1"}
	_, err := tab.Register(m, t0)
	require.NoError(t, err)
	m.PrivateInstanceID, m.PrivateInstanceIndex = "ig-2", "4"
	_, err = tab.Register(m, t0.Add(5*time.Second))
	require.NoError(t, err)
	require.Equal(t, []Endpoint{{
		Address: "10.0.0.1:61000", Host: "10.0.0.1", Port: 61000, App: "log-1", PrivateInstanceID: "ig-2", Index: "4",
		AvailabilityZone: "z1", ServerCertSAN: "ig-1", UpdatedAt: t0.Add(5 * time.Second),
	}}, tab.Routes()["a.example.com"])
}

func TestTablePrune(t *testing.T) {
	const threshold = 10 * time.Second
	tests := []struct {
		name       string
		registered time.Duration // before now
		tlsPort    uint32
		pruned     bool
	}{
		{name: "fresh", registered: 5 * time.Second},
		{name: "exactly at the threshold", registered: threshold},
		{name: "stale", registered: threshold + time.Millisecond, pruned: true},
		{name: "stale but tls: never pruned by age", registered: time.Hour, tlsPort: 61001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := NewTable()
			now := t0.Add(time.Hour)
			_, err := tab.Register(reg("10.0.0.1", 61000, tt.tlsPort, "a.example.com"), now.Add(-tt.registered))
			require.NoError(t, err)
			pruned := tab.Prune(now, threshold)
			if tt.pruned {
				require.Equal(t, []string{"a.example.com 10.0.0.1:61000"}, pruned)
				require.Zero(t, tab.Len())
				require.Empty(t, tab.Routes())
			} else {
				require.Empty(t, pruned)
				require.Equal(t, 1, tab.Len())
			}
		})
	}
}

func TestTableLookup(t *testing.T) {
	tab := NewTable()
	for _, m := range []RegistryMessage{
		reg("10.0.0.2", 1, 0, "a.example.com"),
		reg("10.0.0.1", 1, 0, "a.example.com"),
		reg("10.0.0.3", 1, 0, "a.example.com/api"),
	} {
		_, err := tab.Register(m, t0)
		require.NoError(t, err)
	}
	tests := []struct {
		host, path string
		wantURI    string
		wantAddrs  []string
	}{
		{host: "a.example.com", path: "/", wantURI: "a.example.com", wantAddrs: []string{"10.0.0.1:1", "10.0.0.2:1"}},
		{host: "A.Example.com:8081", path: "/x/y", wantURI: "a.example.com", wantAddrs: []string{"10.0.0.1:1", "10.0.0.2:1"}},
		{host: "a.example.com", path: "/api/v1", wantURI: "a.example.com/api", wantAddrs: []string{"10.0.0.3:1"}},
		{host: "a.example.com", path: "/apix", wantURI: "a.example.com", wantAddrs: []string{"10.0.0.1:1", "10.0.0.2:1"}},
		{host: "b.example.com", path: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.host+tt.path, func(t *testing.T) {
			uri, eps := tab.Lookup(tt.host, tt.path)
			require.Equal(t, tt.wantURI, uri)
			var addrs []string
			for _, ep := range eps {
				addrs = append(addrs, ep.Address)
			}
			require.Equal(t, tt.wantAddrs, addrs)
		})
	}
}
