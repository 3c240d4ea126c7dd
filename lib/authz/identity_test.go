package authz_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/authz"
)

func chain(cn string) []*x509.Certificate {
	return []*x509.Certificate{{Subject: pkix.Name{CommonName: cn}}}
}

func TestIdentify(t *testing.T) {
	names := authz.DefaultNames()
	for _, tc := range []struct {
		cn      string
		want    authz.Identity
		wantErr string
	}{
		{cn: "drover-client", want: authz.Identity{Role: authz.RoleOperator, CommonName: "drover-client"}},
		{cn: "bbs", want: authz.Identity{Role: authz.RoleBBS, CommonName: "bbs"}},
		{cn: "auctioneer", want: authz.Identity{Role: authz.RoleAuctioneer, CommonName: "auctioneer"}},
		{cn: "converger", want: authz.Identity{Role: authz.RoleConverger, CommonName: "converger"}},
		{cn: "route-emitter", want: authz.Identity{Role: authz.RoleRouteEmitter, CommonName: "route-emitter"}},
		{cn: "cell:cell-1", want: authz.Identity{Role: authz.RoleCell, Cell: "cell-1", CommonName: "cell:cell-1"}},
		{cn: "cell:", want: authz.Identity{CommonName: "cell:"}, wantErr: `certificate "cell:" names no cell`},
		{cn: "stranger", want: authz.Identity{CommonName: "stranger"}, wantErr: `certificate "stranger" has no role`},
		{cn: "", want: authz.Identity{}, wantErr: `certificate "" has no role`},
	} {
		t.Run(tc.cn, func(t *testing.T) {
			got, err := names.Identify(chain(tc.cn))
			require.Equal(t, tc.want, got)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tc.wantErr)
			}
		})
	}
	_, err := names.Identify(nil)
	require.EqualError(t, err, "no verified client certificate")
}

func TestIdentityString(t *testing.T) {
	require.Equal(t, `cell "cell-1"`, authz.Identity{Role: authz.RoleCell, Cell: "cell-1"}.String())
	require.Equal(t, `operator "drover-client"`, authz.Identity{Role: authz.RoleOperator, CommonName: "drover-client"}.String())
	require.Equal(t, `operator (plaintext)`, authz.Identity{Role: authz.RoleOperator}.String())
	require.Equal(t, `unknown certificate "x"`, authz.Identity{CommonName: "x"}.String())
}

func TestNewNames(t *testing.T) {
	n, err := authz.NewNames("identity_common_names", "rep/", nil)
	require.NoError(t, err)
	require.Equal(t, authz.DefaultCommonNames(), n.CommonNames, "no common names: the defaults")
	id, err := n.Identify(chain("rep/c9"))
	require.NoError(t, err)
	require.Equal(t, authz.Identity{Role: authz.RoleCell, Cell: "c9", CommonName: "rep/c9"}, id)

	n, err = authz.NewNames("identity_common_names", "cell:", map[string]string{"alice": "operator", "bbs-1": "bbs"})
	require.NoError(t, err)
	require.Equal(t, map[string]authz.Role{"alice": authz.RoleOperator, "bbs-1": authz.RoleBBS}, n.CommonNames,
		"configured common names replace the defaults")
	_, err = n.Identify(chain("drover-client"))
	require.Error(t, err)

	_, err = authz.NewNames("identity_common_names", "", nil)
	require.ErrorContains(t, err, "cell_identity_prefix: must not be empty")

	_, err = authz.NewNames("identity_common_names", "cell:", map[string]string{
		"":         "operator",
		"cell:x":   "operator",
		"mallory":  "cell",
		"trudy":    "admin",
		"fine-one": "converger",
	})
	require.Error(t, err)
	for _, want := range []string{
		"identity_common_names: a common name is empty",
		`identity_common_names: "cell:x" starts with the cell prefix "cell:"`,
		`identity_common_names: "mallory" has role "cell"; want one of operator, bbs, auctioneer, converger, route-emitter`,
		`identity_common_names: "trudy" has role "admin"`,
	} {
		require.ErrorContains(t, err, want)
	}
	require.NotContains(t, err.Error(), "fine-one")
}
