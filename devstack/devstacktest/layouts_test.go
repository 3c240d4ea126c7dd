package devstacktest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCellLayoutsAreDistinct(t *testing.T) {
	a, err := cellLayouts(3, []int{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	b, err := cellLayouts(3, []int{7, 8, 9, 10, 11, 12})
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
