package authz_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/lib/authz"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// TestStagingTasksOnly: the stager may act on staging tasks (guid prefix, staging
// domain) and nothing else; other roles are not checked by this rule.
func TestStagingTasksOnly(t *testing.T) {
	stager := authz.Identity{Role: authz.RoleStager, CommonName: "stager"}
	operator := authz.Identity{Role: authz.RoleOperator, CommonName: "drover-client"}
	for _, tc := range []struct {
		name    string
		id      authz.Identity
		req     any
		refused string
	}{
		{"a staging task", stager, &bbsv1.DesireTaskRequest{TaskGuid: "staging-app-1", Domain: "staging"}, ""},
		{"a staging task read", stager, &bbsv1.GetTaskRequest{TaskGuid: "staging-app-1"}, ""},
		{"a staging task's logs", stager, &repv1.StreamLogsRequest{TaskGuid: "staging-app-1"}, ""},
		{"another task", stager, &bbsv1.GetTaskRequest{TaskGuid: "task-1"}, `guid "task-1" does not start with "staging-"`},
		{"a staging guid in another domain", stager, &bbsv1.DesireTaskRequest{TaskGuid: "staging-x", Domain: "apps"}, `domain "apps" is not "staging"`},
		{"an app's logs", stager, &repv1.StreamLogsRequest{TaskGuid: "staging-x", ProcessGuid: "app-1"}, `not on process "app-1"`},
		{"a request without a task", stager, &bbsv1.ListCellsRequest{}, "names no task"},
		{"an operator, any task", operator, &bbsv1.GetTaskRequest{TaskGuid: "task-1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := authz.StagingTasksOnly(tc.id, tc.req)
			if tc.refused == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, codes.PermissionDenied, status.Code(err))
			require.ErrorContains(t, err, tc.refused)
		})
	}
}
