package executor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUserNamespaceValidate(t *testing.T) {
	ok := UserNamespace{HostUID: 100000, HostGID: 100000, Size: 65536}
	require.NoError(t, ok.Validate("user_namespace"))
	require.NoError(t, UserNamespace{HostUID: math.MaxUint32 - 65536, HostGID: 1, Size: 65536}.Validate("x"))

	for _, tc := range []struct {
		name string
		u    UserNamespace
		want []string
	}{
		{"zero uid", UserNamespace{HostUID: 0, HostGID: 1, Size: 65536}, []string{"ns.host_uid: must be greater than 0"}},
		{"negative gid", UserNamespace{HostUID: 1, HostGID: -5, Size: 65536}, []string{"ns.host_gid: must be greater than 0"}},
		{"small size", UserNamespace{HostUID: 1, HostGID: 1, Size: 65535}, []string{"ns.size: must be at least 65536"}},
		{"uid overflow", UserNamespace{HostUID: math.MaxUint32 - 65535, HostGID: 1, Size: 65536}, []string{"ns.host_uid: host_uid+size must be at most 4294967295"}},
		{"gid overflow", UserNamespace{HostUID: 1, HostGID: math.MaxUint32, Size: 65536}, []string{"ns.host_gid: host_gid+size must be at most 4294967295"}},
		{"all at once", UserNamespace{}, []string{"ns.host_uid:", "ns.host_gid:", "ns.size:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.u.Validate("ns")
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}
