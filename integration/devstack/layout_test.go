package devstack

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDevCellLayout(t *testing.T) {
	tests := []struct {
		i    int
		want cellLayout
	}{
		{1, cellLayout{ID: "cell-1", Zone: "z1", Namespace: "drover-cell-1", Bridge: "drover-c1", Subnet: "10.88.1.0/24",
			ListenPort: 1800, DebugPort: 1801, HostPortStart: 61000, HostPortEnd: 61999}},
		{3, cellLayout{ID: "cell-3", Zone: "z3", Namespace: "drover-cell-3", Bridge: "drover-c3", Subnet: "10.88.3.0/24",
			ListenPort: 1820, DebugPort: 1821, HostPortStart: 63000, HostPortEnd: 63999}},
		{4, cellLayout{ID: "cell-4", Zone: "z1", Namespace: "drover-cell-4", Bridge: "drover-c4", Subnet: "10.88.4.0/24",
			ListenPort: 1830, DebugPort: 1831, HostPortStart: 64000, HostPortEnd: 64999}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, devCellLayout(tt.i, DefaultRepPort))
	}
}

func TestTestCellLayoutsAreDistinct(t *testing.T) {
	a, err := testCellLayouts(3, []int{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	b, err := testCellLayouts(3, []int{7, 8, 9, 10, 11, 12})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, l := range append(a, b...) {
		require.LessOrEqual(t, len(l.Bridge), 15, "bridge names are interface names")
		_, _, err := net.ParseCIDR(l.Subnet)
		require.NoError(t, err)
		require.GreaterOrEqual(t, l.HostPortStart, 20000)
		require.LessOrEqual(t, l.HostPortEnd, 32767)
		for _, key := range []string{"ns " + l.Namespace, "br " + l.Bridge, "net " + l.Subnet} {
			require.False(t, seen[key], "%s is used twice", key)
			seen[key] = true
		}
	}
	require.Equal(t, []string{"z1", "z2", "z3"}, []string{a[0].Zone, a[1].Zone, a[2].Zone})
	require.Equal(t, 1, a[0].ListenPort)
	require.Equal(t, 4, a[1].DebugPort)
}
