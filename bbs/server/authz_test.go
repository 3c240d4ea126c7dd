package server_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/server"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestCellOf(t *testing.T) {
	a := server.CellAuthorizer{Prefix: "cell:"}
	chain := func(cn string) []*x509.Certificate { return []*x509.Certificate{{Subject: pkix.Name{CommonName: cn}}} }
	require.Equal(t, "cell-1", a.CellOf(chain("cell:cell-1")))
	require.Empty(t, a.CellOf(chain("drover-client")))
	require.Empty(t, a.CellOf(nil))
	require.Empty(t, server.CellAuthorizer{}.CellOf(chain("cell:cell-1")), "no prefix: no cell identities")
}

func TestAuthorizeCellCalls(t *testing.T) {
	a := server.CellAuthorizer{Prefix: "cell:"}
	ik := func(cell string) *modelsv1.ActualLRPInstanceKey {
		return &modelsv1.ActualLRPInstanceKey{InstanceGuid: "i", CellId: cell}
	}
	const svc = "/drover.bbs.v1."
	for _, tc := range []struct {
		name, cell, method string
		req                any
		allowed            bool
	}{
		{"operators are not restricted", "", svc + "DesiredLRPService/DesireLRP", &bbsv1.DesireLRPRequest{}, true},
		{"a cell heartbeats itself", "cell-1", svc + "CellService/HeartbeatCell",
			&bbsv1.HeartbeatCellRequest{CellPresence: &modelsv1.CellPresence{CellId: "cell-1"}}, true},
		{"a cell cannot heartbeat another", "cell-1", svc + "CellService/HeartbeatCell",
			&bbsv1.HeartbeatCellRequest{CellPresence: &modelsv1.CellPresence{CellId: "cell-2"}}, false},
		{"a cell cannot remove another", "cell-1", svc + "CellService/RemoveCell", &bbsv1.RemoveCellRequest{CellId: "cell-2"}, false},
		{"a cell claims for itself", "cell-1", svc + "ActualLRPService/ClaimActualLRP",
			&bbsv1.ClaimActualLRPRequest{ActualLrpInstanceKey: ik("cell-1")}, true},
		{"a cell cannot start for another", "cell-1", svc + "ActualLRPService/StartActualLRP",
			&bbsv1.StartActualLRPRequest{ActualLrpInstanceKey: ik("cell-2")}, false},
		{"a cell cannot crash another's instance", "cell-1", svc + "ActualLRPService/CrashActualLRP",
			&bbsv1.CrashActualLRPRequest{ActualLrpInstanceKey: ik("cell-2")}, false},
		{"a cell cannot remove without its instance key", "cell-1", svc + "ActualLRPService/RemoveActualLRP",
			&bbsv1.RemoveActualLRPRequest{ProcessGuid: "p"}, false},
		{"a cell evacuates its own", "cell-1", svc + "ActualLRPService/EvacuateRunningActualLRP",
			&bbsv1.EvacuateRunningActualLRPRequest{ActualLrpInstanceKey: ik("cell-1")}, true},
		{"a cell cannot evacuate another's", "cell-1", svc + "ActualLRPService/EvacuateStoppedActualLRP",
			&bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpInstanceKey: ik("cell-2")}, false},
		{"a cell starts a task for itself", "cell-1", svc + "TaskService/StartTask", &bbsv1.StartTaskRequest{TaskGuid: "t", CellId: "cell-1"}, true},
		{"a cell cannot complete another's task", "cell-1", svc + "TaskService/CompleteTask", &bbsv1.CompleteTaskRequest{TaskGuid: "t", CellId: "cell-2"}, false},
		{"a cell rejects tasks", "cell-1", svc + "TaskService/RejectTask", &bbsv1.RejectTaskRequest{TaskGuid: "t"}, true},
		{"a cell reads", "cell-1", svc + "ActualLRPService/ListActualLRPs", &bbsv1.ListActualLRPsRequest{CellId: "cell-2"}, true},
		{"a cell subscribes", "cell-1", svc + "EventService/Subscribe", nil, true},
		{"a cell cannot desire", "cell-1", svc + "DesiredLRPService/DesireLRP", &bbsv1.DesireLRPRequest{}, false},
		{"a cell cannot retire", "cell-1", svc + "ActualLRPService/RetireActualLRP", &bbsv1.RetireActualLRPRequest{}, false},
		{"a cell cannot cordon", "cell-1", svc + "CellService/CordonCell", &bbsv1.CordonCellRequest{CellId: "cell-1"}, false},
		{"a cell cannot take locks", "cell-1", svc + "LockService/AcquireLock", &bbsv1.AcquireLockRequest{}, false},
		{"a cell cannot converge", "cell-1", svc + "ConvergenceService/ApplyLRPActions", &bbsv1.ApplyLRPActionsRequest{}, false},
		{"health is open", "cell-1", "/grpc.health.v1.Health/Check", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Authorize(tc.cell, tc.method, tc.req)
			if tc.allowed {
				require.NoError(t, err)
				return
			}
			require.Equal(t, codes.PermissionDenied, status.Code(err))
			require.Contains(t, err.Error(), `cell "cell-1"`)
		})
	}
}
