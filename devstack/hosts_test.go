package devstack

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/natstest"
	"drover.dev/devstack/natsuser"
)

func prefixes(t *testing.T, ps ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, p := range ps {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

func TestPlanHostNetworkLayout(t *testing.T) {
	n, err := PlanHostNetwork("a1b2c3", 3, nil)
	require.NoError(t, err)
	require.Equal(t, "10.213.0.0/24", n.Subnet)
	require.Equal(t, "10.213.0.1", n.Gateway)
	require.Equal(t, "drha1b2c3", n.Bridge)
	var names, ips, veths []string
	for _, h := range n.Hosts {
		names, ips, veths = append(names, h.Name), append(ips, h.IP), append(veths, h.Veth)
		require.Equal(t, "drover-a1b2c3-"+h.Name, h.Netns)
		require.LessOrEqual(t, len(h.Veth), 15, "interface names fit IFNAMSIZ")
	}
	require.Equal(t, []string{"control", "router", "client", "cell-1", "cell-2", "cell-3"}, names)
	require.Equal(t, []string{"10.213.0.2", "10.213.0.3", "10.213.0.4", "10.213.0.11", "10.213.0.12", "10.213.0.13"}, ips)
	require.Equal(t, []string{"drha1b2c30", "drha1b2c31", "drha1b2c32", "drha1b2c33", "drha1b2c34", "drha1b2c35"}, veths)
	require.Equal(t, "10.213.0.12", n.Host("cell-2").IP)
	require.Nil(t, n.Host("cell-4"))
}

func TestPlanHostNetworkSkipsUsedSubnets(t *testing.T) {
	for name, tc := range map[string]struct {
		used []string
		want string
	}{
		"nothing used":              {nil, "10.213.0.0/24"},
		"a default route":           {[]string{"0.0.0.0/0"}, "10.213.0.0/24"},
		"an address in the first":   {[]string{"10.213.0.7/32"}, "10.213.1.0/24"},
		"the first two":             {[]string{"10.213.0.0/24", "10.213.1.0/24"}, "10.213.2.0/24"},
		"a wider route":             {[]string{"10.213.0.0/23"}, "10.213.2.0/24"},
		"other networks":            {[]string{"10.88.1.0/24", "192.0.2.0/24"}, "10.213.0.0/24"},
		"a route elsewhere in 10/8": {[]string{"10.0.0.0/9"}, "10.213.0.0/24"},
	} {
		t.Run(name, func(t *testing.T) {
			n, err := PlanHostNetwork("000000", 1, prefixes(t, tc.used...))
			require.NoError(t, err)
			require.Equal(t, tc.want, n.Subnet)
		})
	}
}

func TestPlanHostNetworkRefusesBadInput(t *testing.T) {
	_, err := PlanHostNetwork("xyz", 1, nil)
	require.ErrorContains(t, err, `id "xyz" must be 6 lowercase hex digits`)
	_, err = PlanHostNetwork("ABCDEF", 1, nil)
	require.ErrorContains(t, err, "lowercase hex digits")
	_, err = PlanHostNetwork("abcdef", 0, nil)
	require.ErrorContains(t, err, "between 1 and 200, got 0")
	_, err = PlanHostNetwork("abcdef", MaxHosts+1, nil)
	require.ErrorContains(t, err, "got 201")
	_, err = PlanHostNetwork("x", -1, nil)
	require.ErrorContains(t, err, `id "x" must be`, "every bad input is named")
	require.ErrorContains(t, err, "got -1", "every bad input is named")
	_, err = PlanHostNetwork("abcdef", 1, prefixes(t, "10.213.0.0/16"))
	require.ErrorContains(t, err, "every 10.213.N.0/24 is in use")
}

func TestRewriteAddresses(t *testing.T) {
	type cfg struct {
		Listen string   `json:"listen_address"`
		BBS    string   `json:"bbs_address"`
		NATS   []string `json:"nats_addresses"`
		Admin  string   `json:"debug_admin_address"`
		Other  string   `json:"other"`
	}
	moved := map[string]string{"127.0.0.1:1800": "10.213.0.11:1800", "127.0.0.1:8889": "10.213.0.2:8889", "127.0.0.1:4222": "10.213.0.3:4222"}
	c := cfg{Listen: "127.0.0.1:1800", BBS: "127.0.0.1:8889", NATS: []string{"nats://127.0.0.1:4222"}, Other: "127.0.0.10"}
	require.NoError(t, rewriteAddresses(&c, moved, "unix:/x/debug.sock"))
	require.Equal(t, cfg{Listen: "10.213.0.11:1800", BBS: "10.213.0.2:8889", NATS: []string{"nats://10.213.0.3:4222"}, Admin: "unix:/x/debug.sock", Other: "127.0.0.10"}, c)

	kept := cfg{Admin: "off"}
	require.NoError(t, rewriteAddresses(&kept, moved, "unix:/x/debug.sock"))
	require.Equal(t, "off", kept.Admin, "a set debug_admin_address is kept")

	bad := cfg{Listen: "127.0.0.1:9999", BBS: "127.0.0.1", Other: "127.0.0.1:1800"}
	err := rewriteAddresses(&bad, moved, "")
	require.ErrorContains(t, err, "127.0.0.1, 127.0.0.1:9999 is not the address of any listener on the test network")
}

// TestHostNATSPermissionsMatchNatstest keeps the router host's nats-server permissions
// those of the tests' embedded server (and so scripts/nats.sh's).
func TestHostNATSPermissionsMatchNatstest(t *testing.T) {
	for _, u := range natsuser.All {
		want := natstest.Permissions(u)
		got := natsPermissions[u]
		require.Equal(t, want.Publish.Allow, got.Publish.Allow, u)
		require.Equal(t, want.Subscribe.Allow, got.Subscribe.Allow, u)
		if want.Response == nil {
			require.Nil(t, got.AllowResponses, u)
			continue
		}
		require.Equal(t, want.Response.MaxMsgs, got.AllowResponses.Max, u)
		expires, err := time.ParseDuration(got.AllowResponses.Expires)
		require.NoError(t, err, u)
		require.Equal(t, want.Response.Expires, expires, u)
	}
}

func TestValidateHostsOptionsNamesEveryBadOption(t *testing.T) {
	require.NoError(t, validateHostsOptions(Options{Hosts: 3, Replicas: 1, Cells: 1}, 0), "cells not given")
	require.NoError(t, validateHostsOptions(Options{Hosts: 3, Replicas: 1}, 3))
	err := validateHostsOptions(Options{Hosts: 5, Replicas: 2, DatabaseURL: "postgres://x"}, 2)
	require.Error(t, err)
	for _, want := range []string{"at most 4 cell hosts", "got 5", "cells: ", "got 2", "database-url: ", "replicas: "} {
		require.ErrorContains(t, err, want)
	}
	require.ErrorContains(t, validateHostsOptions(Options{Hosts: 2, Replicas: 1}, -1), "cells: ", "-cells 0 is refused too")
}
