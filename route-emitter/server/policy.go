package server

import (
	"drover.dev/lib/authz"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// Policy is who may read the route-emitter's table (docs/architecture.md
// "Authorisation"): operators.
func Policy() authz.Policy {
	return authz.CommonPolicy().With(authz.Policy{
		routeemitterv1.RouteEmitterService_ListRoutes_FullMethodName: authz.Allow(authz.RoleOperator),
	})
}
