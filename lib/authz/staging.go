package authz

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Staging tasks are the only tasks the stager may desire, read, cancel and delete: their
// guid starts with StagingTaskPrefix and their domain is StagingDomain.
const (
	StagingTaskPrefix = "staging-"
	StagingDomain     = "staging"
)

// StagingTasksOnly is a rule Check that lets a stager act on staging tasks only: the
// request's task guid must start with StagingTaskPrefix and, where it names one, its
// domain must be StagingDomain. Other roles pass.
func StagingTasksOnly(id Identity, req any) error {
	if id.Role != RoleStager {
		return nil
	}
	r, ok := req.(interface{ GetTaskGuid() string })
	if !ok {
		return status.Errorf(codes.PermissionDenied, "%s may act on staging tasks only; the request names no task", id)
	}
	if guid := r.GetTaskGuid(); !strings.HasPrefix(guid, StagingTaskPrefix) {
		return status.Errorf(codes.PermissionDenied, "%s may act on staging tasks only (guid %q does not start with %q)", id, guid, StagingTaskPrefix)
	}
	if p, ok := req.(interface{ GetProcessGuid() string }); ok && p.GetProcessGuid() != "" {
		return status.Errorf(codes.PermissionDenied, "%s may act on staging tasks only, not on process %q", id, p.GetProcessGuid())
	}
	if d, ok := req.(interface{ GetDomain() string }); ok && d.GetDomain() != StagingDomain {
		return status.Errorf(codes.PermissionDenied, "%s may desire staging tasks only (domain %q is not %q)", id, d.GetDomain(), StagingDomain)
	}
	return nil
}

// StagingRule admits operators and, for staging tasks only, the stager (plus roles).
func StagingRule(roles ...Role) Rule {
	return Rule{Roles: append([]Role{RoleOperator, RoleStager}, roles...), Check: StagingTasksOnly}
}
