package handlers

import (
	"drover.dev/lib/authz"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// Policy is who may call the rep (docs/architecture.md "Authorisation"): the
// auctioneer asks for State and sends work, the BBS stops instances and cancels tasks,
// operators may do all that, evacuate the cell, read its logs and metrics and exec
// into its instances; the stager may read a staging task's logs; any authenticated caller may Ping. Every other caller, cells
// included, is refused.
func Policy() authz.Policy {
	const (
		operator   = authz.RoleOperator
		auctioneer = authz.RoleAuctioneer
		bbs        = authz.RoleBBS
	)
	return authz.CommonPolicy().With(authz.Policy{
		repv1.RepService_State_FullMethodName:            authz.Allow(operator, auctioneer, bbs),
		repv1.RepService_Perform_FullMethodName:          authz.Allow(operator, auctioneer),
		repv1.RepService_StopLRPInstance_FullMethodName:  authz.Allow(operator, bbs),
		repv1.RepService_CancelTask_FullMethodName:       authz.Allow(operator, bbs),
		repv1.RepService_Ping_FullMethodName:             authz.Allow(authz.Roles...),
		repv1.RepService_StreamLogs_FullMethodName:       authz.StagingRule(), // the stager: a staging task's logs
		repv1.RepService_ContainerMetrics_FullMethodName: authz.Allow(operator),
		repv1.RepService_Evacuate_FullMethodName:         authz.Allow(operator),
		repv1.RepService_Exec_FullMethodName:             authz.Allow(operator),
	})
}
