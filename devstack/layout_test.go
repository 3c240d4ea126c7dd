package devstack

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDevCellLayout(t *testing.T) {
	tests := []struct {
		i    int
		want CellLayout
	}{
		{1, CellLayout{ID: "cell-1", Zone: "z1", Namespace: "drover-cell-1", Bridge: "drover-c1", Subnet: "10.88.1.0/24",
			ListenPort: 1800, DebugPort: 1801, HostPortStart: 61000, HostPortEnd: 61999}},
		{3, CellLayout{ID: "cell-3", Zone: "z3", Namespace: "drover-cell-3", Bridge: "drover-c3", Subnet: "10.88.3.0/24",
			ListenPort: 1820, DebugPort: 1821, HostPortStart: 63000, HostPortEnd: 63999}},
		{4, CellLayout{ID: "cell-4", Zone: "z1", Namespace: "drover-cell-4", Bridge: "drover-c4", Subnet: "10.88.4.0/24",
			ListenPort: 1830, DebugPort: 1831, HostPortStart: 64000, HostPortEnd: 64999}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, devCellLayout(tt.i, DefaultRepPort))
	}
}
