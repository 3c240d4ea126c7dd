package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/coreos/go-iptables/iptables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
)

func TestRemoveCellLeavesNothingOfACrashedCell(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 4)
	ctx := context.Background()
	m, err := New(cfg, nil) // a rep that dies with its containers attached
	require.NoError(t, err)
	a, err := m.Setup(ctx, "crashed-1", []uint32{8080})
	require.NoError(t, err)
	b, err := m.Setup(ctx, "crashed-2", []uint32{8080, 9090})
	require.NoError(t, err)
	// One attachment lost its record: RemoveCell finds it as Prune does.
	require.NoError(t, os.Remove(filepath.Join(cfg.StateDir, "records", "crashed-2.json")))

	left, err := CellLeftovers(cfg)
	require.NoError(t, err)
	assert.Contains(t, left, "netns file "+a.NetnsPath)
	assert.Contains(t, left, "netns file "+b.NetnsPath)
	assert.Len(t, portNames(t, cfg.BridgeName), 2)
	require.True(t, iptablesMentions(t, a.InternalIP))

	require.NoError(t, RemoveCell(ctx, cfg, nil))

	left, err = CellLeftovers(cfg)
	require.NoError(t, err)
	assert.Empty(t, left)
	_, err = netlink.LinkByName(cfg.BridgeName)
	assert.ErrorAs(t, err, &netlink.LinkNotFoundError{}, "the bridge is gone")
	for _, att := range []Attachment{a, b} {
		assert.NoFileExists(t, att.NetnsPath)
		assert.False(t, iptablesMentions(t, att.InternalIP), "no iptables rule names %s", att.InternalIP)
		assert.False(t, ipamReserved(cfg, att.InternalIP))
	}

	require.NoError(t, RemoveCell(ctx, cfg, nil), "removing a removed cell")
	missing := cfg
	missing.StateDir = filepath.Join(t.TempDir(), "never-made")
	require.NoError(t, RemoveCell(ctx, missing, nil), "a cell that never ran")
	assert.NoDirExists(t, missing.StateDir, "nothing is created for it")
}

// TestRemoveCellSweepsRulesNamingTheCell adds rules by hand in chains of the test's own
// that no built-in chain jumps to (they see no traffic): the ones naming the cell's
// subnet, bridge or network go, with the chain only they jumped to; the others stay.
func TestRemoveCellSweepsRulesNamingTheCell(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 1)
	ipt, err := iptables.New()
	require.NoError(t, err)
	suffix := make([]byte, 4)
	_, err = rand.Read(suffix)
	require.NoError(t, err)
	entry, orphan, shared := "DTE-"+hex.EncodeToString(suffix), "DTO-"+hex.EncodeToString(suffix), "DTS-"+hex.EncodeToString(suffix)
	chains := []string{entry, orphan, shared}
	t.Cleanup(func() {
		for _, c := range chains { // flush all first: they reference each other
			if exists, err := ipt.ChainExists("filter", c); err == nil && exists {
				assert.NoError(t, ipt.ClearChain("filter", c))
			}
		}
		for _, c := range chains {
			assert.NoError(t, ipt.ClearAndDeleteChain("filter", c))
		}
	})
	for _, c := range chains {
		require.NoError(t, ipt.NewChain("filter", c))
	}
	_, subnet, err := net.ParseCIDR(cfg.Subnet)
	require.NoError(t, err)
	inCell := net.IPv4(subnet.IP[0], subnet.IP[1], subnet.IP[2], 7).String()
	require.NoError(t, ipt.Append("filter", orphan, "-j", shared))
	require.NoError(t, ipt.Append("filter", entry, "-s", inCell+"/32", "-j", orphan))
	require.NoError(t, ipt.Append("filter", entry, "-o", cfg.BridgeName, "-j", "RETURN"))
	require.NoError(t, ipt.Append("filter", entry, "-m", "comment", "--comment",
		`name: "`+networkName(cfg.BridgeName)+`" id: "x"`, "-j", "RETURN"))
	kept := []string{"-s", "192.0.2.1/32", "-j", shared} // names no cell: stays, and keeps shared
	require.NoError(t, ipt.Append("filter", entry, kept...))

	left, err := CellLeftovers(cfg)
	require.NoError(t, err)
	assert.Len(t, left, 3, "the three rules naming the cell: %v", left)

	require.NoError(t, RemoveCell(context.Background(), cfg, nil))

	left, err = CellLeftovers(cfg)
	require.NoError(t, err)
	assert.Empty(t, left)
	rules, err := ipt.List("filter", entry)
	require.NoError(t, err)
	assert.Equal(t, []string{"-N " + entry, "-A " + entry + " -s 192.0.2.1/32 -j " + shared}, rules)
	exists, err := ipt.ChainExists("filter", orphan)
	require.NoError(t, err)
	assert.False(t, exists, "the chain only a removed rule jumped to is gone")
	exists, err = ipt.ChainExists("filter", shared)
	require.NoError(t, err)
	assert.True(t, exists, "a chain another rule still jumps to stays")
}

func TestSplitRuleArgs(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`POSTROUTING -s 10.88.1.5/32 -j CNI-abc`, []string{"POSTROUTING", "-s", "10.88.1.5/32", "-j", "CNI-abc"}},
		{`CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"drover-br\" id: \"x\"" -j CNI-DN-1`,
			[]string{"CNI-HOSTPORT-DNAT", "-p", "tcp", "-m", "comment", "--comment", `dnat name: "drover-br" id: "x"`, "-j", "CNI-DN-1"}},
		{`X --comment ""`, []string{"X", "--comment", ""}},
		{`X  -j   Y `, []string{"X", "-j", "Y"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, splitRuleArgs(tt.line), tt.line)
	}
}

func TestRuleMentionsTheCell(t *testing.T) {
	_, subnet, err := net.ParseCIDR("10.201.7.0/24")
	require.NoError(t, err)
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"-s", "10.201.7.9/32", "-j", "CNI-1"}, true},
		{[]string{"-d", "10.201.7.0/24", "-j", "ACCEPT"}, true},
		{[]string{"-s", "10.201.8.9/32", "-j", "CNI-1"}, false},
		{[]string{"-o", "drtabc123c1", "-j", "ACCEPT"}, true},
		{[]string{"-o", "drtabc123c10", "-j", "ACCEPT"}, false},
		{[]string{"--comment", `dnat name: "drover-drtabc123c1" id: "g"`, "-j", "CNI-DN-2"}, true},
		{[]string{"--comment", `name: drover-drtabc123c1 id: "g"`, "-j", "CNI-2"}, true},
		{[]string{"--comment", `name: drover-drtabc123c1`, "-j", "CNI-2"}, true},
		{[]string{"--comment", `name: drover-drtabc123c10 id: "g"`, "-j", "CNI-2"}, false},
		{[]string{"--comment", `dnat name: "drover-drtabc123c10" id: "g"`, "-j", "CNI-2"}, false},
		{[]string{"--comment", `dnat name: "drover-drtabc123c2" id: "g"`, "-j", "CNI-DN-2"}, false},
	}
	for _, tt := range tests {
		r := rule{args: tt.args}
		require.Equal(t, tt.want, r.mentions(subnet, "drtabc123c1"), "%v", tt.args)
	}
	require.Equal(t, "CNI-1", rule{args: []string{"-s", "x", "-j", "CNI-1"}}.target())
	require.Equal(t, "CNI-2", rule{args: []string{"-g", "CNI-2"}}.target())
	require.Empty(t, rule{args: []string{"-s", "x", "-j"}}.target())
}

// TestRemoveCellAfterAHalfDoneTeardown: a rep killed in the middle of a teardown leaves
// an attachment whose iptables rules are gone but whose record and namespace stay; the
// bridge plugin then refuses the second CNI DEL ("Chain ... does not exist"). RemoveCell
// still removes everything of the cell.
func TestRemoveCellAfterAHalfDoneTeardown(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 5)
	ctx := context.Background()
	m, err := New(cfg, nil)
	require.NoError(t, err)
	a, err := m.Setup(ctx, "half-torn", []uint32{8080})
	require.NoError(t, err)
	_, subnet, err := net.ParseCIDR(cfg.Subnet)
	require.NoError(t, err)
	ipt, err := iptables.New()
	require.NoError(t, err)
	require.NoError(t, removeCellRules(ipt, subnet, cfg.BridgeName), "the rules a first DEL removed")

	require.NoError(t, RemoveCell(ctx, cfg, nil))

	left, err := CellLeftovers(cfg)
	require.NoError(t, err)
	assert.Empty(t, left)
	assert.NoFileExists(t, a.NetnsPath)
	assert.False(t, ipamReserved(cfg, a.InternalIP))
}
