// Package authz is drover's authorisation by client certificate, shared by every gRPC
// listener (the BBS, the rep, the auctioneer, the route-emitter): it maps a verified
// TLS peer certificate to an Identity (a role, and for a cell its id), and a Guard
// refuses, with PermissionDenied, every call whose method's Rule does not admit the
// caller. Rules are keyed by the generated full method names; a method without a rule
// is refused, and Unruled lets each service's tests fail when an RPC has none.
package authz

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	libconfig "drover.dev/lib/config"
)

// Role is what a certificate is trusted for.
type Role string

// The roles of drover's components. A component with its own rule set is one more
// constant here and in DefaultCommonNames.
const (
	// RoleOperator is droverctl, the HTTP API's bridges and people: trusted.
	RoleOperator Role = "operator"
	// RoleBBS is the BBS calling reps (stop, cancel) and the auctioneer.
	RoleBBS Role = "bbs"
	// RoleAuctioneer is the auctioneer: its lock, cells, placement results, reps' State and Perform.
	RoleAuctioneer Role = "auctioneer"
	// RoleConverger is the converger: snapshots, conditional corrections, its lock.
	RoleConverger Role = "converger"
	// RoleRouteEmitter is the route-emitter: reads of instances and routes, its lock.
	RoleRouteEmitter Role = "route-emitter"
	// RoleCell is a rep acting for its own cell only (Identity.Cell).
	RoleCell Role = "cell"
	// RoleStager is the stager: staging tasks only (StagingTasksOnly), and the cells.
	RoleStager Role = "stager"
)

// Roles are every role, for rules that admit any authenticated caller.
var Roles = []Role{RoleOperator, RoleBBS, RoleAuctioneer, RoleConverger, RoleRouteEmitter, RoleCell, RoleStager}

// DefaultCellPrefix starts the common name of a rep's certificate: "cell:" and the cell id.
const DefaultCellPrefix = "cell:"

// DefaultCommonNames are the common names of the dev stack's certificates (lib/devcerts,
// devstack) and their roles.
func DefaultCommonNames() map[string]Role {
	return map[string]Role{
		"drover-client": RoleOperator,
		"bbs":           RoleBBS,
		"auctioneer":    RoleAuctioneer,
		"converger":     RoleConverger,
		"route-emitter": RoleRouteEmitter,
		"stager":        RoleStager,
	}
}

// Identity is who a verified certificate says the caller is. The zero Identity has no
// role and is refused everywhere.
type Identity struct {
	Role Role
	// Cell is the cell a RoleCell identity acts for (never empty for RoleCell).
	Cell string
	// CommonName is the certificate's common name ("" for a plaintext caller).
	CommonName string
}

// String names the identity in errors and logs: `cell "cell-1"`, `operator "drover-client"`.
func (id Identity) String() string {
	switch {
	case id.Role == RoleCell:
		return fmt.Sprintf("cell %q", id.Cell)
	case id.Role == "":
		return fmt.Sprintf("unknown certificate %q", id.CommonName)
	case id.CommonName == "":
		return string(id.Role) + " (plaintext)"
	default:
		return fmt.Sprintf("%s %q", id.Role, id.CommonName)
	}
}

// Names maps certificate common names to roles: a common name that starts with
// CellPrefix names a cell, the others are looked up in CommonNames.
type Names struct {
	CellPrefix  string
	CommonNames map[string]Role
}

// DefaultNames are the dev stack's names.
func DefaultNames() Names {
	return Names{CellPrefix: DefaultCellPrefix, CommonNames: DefaultCommonNames()}
}

// NewNames builds Names from a configuration's cell prefix and common names (nil or
// empty commonNames means DefaultCommonNames), naming field in its errors: the prefix
// must be set, every role known, and no common name may start with the prefix.
func NewNames(field, cellPrefix string, commonNames map[string]string) (Names, error) {
	n := Names{CellPrefix: cellPrefix, CommonNames: DefaultCommonNames()}
	var errs []error
	if cellPrefix == "" {
		errs = append(errs, libconfig.Invalid("cell_identity_prefix", "must not be empty: it is how a rep's certificate is recognised"))
	}
	if len(commonNames) > 0 {
		n.CommonNames = make(map[string]Role, len(commonNames))
		for _, cn := range sortedKeys(commonNames) {
			role := Role(commonNames[cn])
			switch {
			case cn == "":
				errs = append(errs, libconfig.Invalid(field, "a common name is empty"))
			case cellPrefix != "" && strings.HasPrefix(cn, cellPrefix):
				errs = append(errs, libconfig.Invalid(field, "%q starts with the cell prefix %q", cn, cellPrefix))
			case role == RoleCell || !slices.Contains(Roles, role):
				errs = append(errs, libconfig.Invalid(field, "%q has role %q; want one of %s", cn, role, componentRoles()))
			}
			n.CommonNames[cn] = role
		}
	}
	return n, errors.Join(errs...)
}

// ComponentNames are the Names of a component other than the BBS (rep, auctioneer,
// route-emitter): the default cell prefix, and its configuration's
// identity_common_names (nil: the defaults).
func ComponentNames(commonNames map[string]string) (Names, error) {
	return NewNames("identity_common_names", DefaultCellPrefix, commonNames)
}

// componentRoles lists the roles a common name may be given (all but cell).
func componentRoles() string {
	var names []string
	for _, r := range Roles {
		if r != RoleCell {
			names = append(names, string(r))
		}
	}
	return strings.Join(names, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Identify names the holder of a verified chain (leaf first). A common name with the
// cell prefix and an empty cell id, or one without a role, is an error; the returned
// Identity then carries the common name only.
func (n Names) Identify(chain []*x509.Certificate) (Identity, error) {
	if len(chain) == 0 {
		return Identity{}, errors.New("no verified client certificate")
	}
	cn := chain[0].Subject.CommonName
	if n.CellPrefix != "" && strings.HasPrefix(cn, n.CellPrefix) {
		cell := strings.TrimPrefix(cn, n.CellPrefix)
		if cell == "" {
			return Identity{CommonName: cn}, fmt.Errorf("certificate %q names no cell", cn)
		}
		return Identity{Role: RoleCell, Cell: cell, CommonName: cn}, nil
	}
	if role, ok := n.CommonNames[cn]; ok {
		return Identity{Role: role, CommonName: cn}, nil
	}
	return Identity{CommonName: cn}, fmt.Errorf("certificate %q has no role", cn)
}

type identityKey struct{}

// NewContext returns ctx carrying id (the Guard does this for every call it admits).
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext is the identity the Guard admitted the call with; ok is false outside a
// guarded call.
func FromContext(ctx context.Context) (id Identity, ok bool) {
	id, ok = ctx.Value(identityKey{}).(Identity)
	return id, ok
}
