package server

import (
	"drover.dev/lib/authz"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// Policy admits operators to every StagerService method, plus the common methods
// (health, reflection).
func Policy() authz.Policy {
	operators := authz.Allow(authz.RoleOperator)
	return authz.Policy{
		stagerv1.StagerService_Stage_FullMethodName:           operators,
		stagerv1.StagerService_ListStacks_FullMethodName:      operators,
		stagerv1.StagerService_ListBuildpacks_FullMethodName:  operators,
		stagerv1.StagerService_CreateBuildpack_FullMethodName: operators,
		stagerv1.StagerService_UpdateBuildpack_FullMethodName: operators,
		stagerv1.StagerService_DeleteBuildpack_FullMethodName: operators,
	}.With(authz.CommonPolicy())
}
