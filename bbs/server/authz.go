package server

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/lib/authz"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Roles, for the policy table.
const (
	operator     = authz.RoleOperator
	auctioneer   = authz.RoleAuctioneer
	converger    = authz.RoleConverger
	routeEmitter = authz.RoleRouteEmitter
	cell         = authz.RoleCell
	stager       = authz.RoleStager
)

// lockKeys are the locks each component may take and release: its own.
var lockKeys = map[authz.Role]string{
	auctioneer:   "auctioneer",
	converger:    store.ConvergerLockKey,
	routeEmitter: "route_emitter",
}

// Policy is who may call each BBS method (docs/architecture.md "Authorisation").
// Operators may call everything. The auctioneer, the converger and the route-emitter
// may make the calls of their jobs. A cell may make the calls of a rep, each for its own
// cell only: the request must name its own cell (checked here), and the store refuses
// rows it does not hold and definitions of work not placed on it (store.DB.ForCell,
// through Server.dbFor). The stager may desire, read, cancel, resolve and delete staging
// tasks only (authz.StagingTasksOnly) and list the cells.
func Policy() authz.Policy {
	ops := authz.Allow(operator)
	staging := authz.StagingRule() // operators, and the stager for staging tasks only
	cellToo := func(check func(cell models.Actor, req any) error, roles ...authz.Role) authz.Rule {
		return authz.Rule{Roles: append([]authz.Role{operator, cell}, roles...), Check: forCells(check)}
	}
	return authz.CommonPolicy().With(authz.Policy{
		bbsv1.DesiredLRPService_DesireLRP_FullMethodName:                     ops,
		bbsv1.DesiredLRPService_UpdateDesiredLRP_FullMethodName:              ops,
		bbsv1.DesiredLRPService_RemoveDesiredLRP_FullMethodName:              ops,
		bbsv1.DesiredLRPService_GetDesiredLRP_FullMethodName:                 cellToo(nil), // placed on it (store)
		bbsv1.DesiredLRPService_ListDesiredLRPs_FullMethodName:               ops,
		bbsv1.DesiredLRPService_ListDesiredLRPSchedulingInfos_FullMethodName: authz.Allow(operator, routeEmitter),
		bbsv1.DesiredLRPService_GetDesiredLRPSchedulingInfo_FullMethodName:   authz.Allow(operator, routeEmitter),
		bbsv1.DesiredLRPService_ListDesiredLRPRoutingInfos_FullMethodName:    authz.Allow(operator, routeEmitter),

		bbsv1.ActualLRPService_ListActualLRPs_FullMethodName:            cellToo(ownCellID, routeEmitter),
		bbsv1.ActualLRPService_ClaimActualLRP_FullMethodName:            cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_StartActualLRP_FullMethodName:            cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_CrashActualLRP_FullMethodName:            cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_FailActualLRP_FullMethodName:             authz.Allow(operator, auctioneer),
		bbsv1.ActualLRPService_RemoveActualLRP_FullMethodName:           cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_RetireActualLRP_FullMethodName:           ops,
		bbsv1.ActualLRPService_EvacuateClaimedActualLRP_FullMethodName:  cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_EvacuateRunningActualLRP_FullMethodName:  cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_EvacuateStoppedActualLRP_FullMethodName:  cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_EvacuateCrashedActualLRP_FullMethodName:  cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_RemoveEvacuatingActualLRP_FullMethodName: cellToo(ownInstanceKey),
		bbsv1.ActualLRPService_RecordExec_FullMethodName:                cellToo(ownInstanceKey),

		bbsv1.TaskService_DesireTask_FullMethodName:    staging,
		bbsv1.TaskService_GetTask_FullMethodName:       {Roles: []authz.Role{operator, cell, stager}, Check: authz.StagingTasksOnly}, // a cell: on its cell (store)
		bbsv1.TaskService_ListTasks_FullMethodName:     cellToo(ownCellID),
		bbsv1.TaskService_StartTask_FullMethodName:     cellToo(ownCellID),
		bbsv1.TaskService_CancelTask_FullMethodName:    staging,
		bbsv1.TaskService_FailTask_FullMethodName:      ops,
		bbsv1.TaskService_RejectTask_FullMethodName:    cellToo(nil, auctioneer), // a cell: a task on its cell (store)
		bbsv1.TaskService_CompleteTask_FullMethodName:  cellToo(ownCellID),
		bbsv1.TaskService_ResolvingTask_FullMethodName: staging,
		bbsv1.TaskService_DeleteTask_FullMethodName:    staging,

		bbsv1.DomainService_UpsertDomain_FullMethodName: ops,
		bbsv1.DomainService_ListDomains_FullMethodName:  authz.Allow(operator, routeEmitter),

		bbsv1.CellService_HeartbeatCell_FullMethodName: cellToo(ownPresence),
		bbsv1.CellService_RemoveCell_FullMethodName:    cellToo(ownCellID),
		bbsv1.CellService_ListCells_FullMethodName:     authz.Allow(operator, auctioneer, stager),
		bbsv1.CellService_CordonCell_FullMethodName:    ops,
		bbsv1.CellService_UncordonCell_FullMethodName:  ops,

		bbsv1.LockService_AcquireLock_FullMethodName: ownLock(),
		bbsv1.LockService_ReleaseLock_FullMethodName: ownLock(),
		bbsv1.LockService_FetchLock_FullMethodName:   ops,
		bbsv1.LockService_ListLocks_FullMethodName:   ops,

		bbsv1.EventService_Subscribe_FullMethodName: cellToo(ownCellID, routeEmitter), // a cell: its events only (eventScope)

		bbsv1.ConvergenceService_Snapshot_FullMethodName:              authz.Allow(operator, converger),
		bbsv1.ConvergenceService_ApplyLRPActions_FullMethodName:       authz.Allow(operator, converger),
		bbsv1.ConvergenceService_ApplyTaskActions_FullMethodName:      authz.Allow(operator, converger),
		bbsv1.ConvergenceService_GetConvergerStatus_FullMethodName:    authz.Allow(operator, converger),
		bbsv1.ConvergenceService_SetConvergerPaused_FullMethodName:    ops,
		bbsv1.ConvergenceService_ReportConvergencePass_FullMethodName: authz.Allow(operator, converger),
		bbsv1.ConvergenceService_RequestAuctions_FullMethodName:       authz.Allow(operator, converger),
	})
}

// forCells runs check (when set) for callers whose role is cell.
func forCells(check func(cell models.Actor, req any) error) func(authz.Identity, any) error {
	return func(id authz.Identity, req any) error {
		if check == nil || id.Role != cell {
			return nil
		}
		return check(models.CellActor(id.Cell), req)
	}
}

// ownInstanceKey: the request's instance key names the caller's cell.
func ownInstanceKey(c models.Actor, req any) error {
	r, ok := req.(interface {
		GetActualLrpInstanceKey() *modelsv1.ActualLRPInstanceKey
	})
	if !ok {
		return c.MayUseInstanceKey(nil)
	}
	return c.MayUseInstanceKey(r.GetActualLrpInstanceKey())
}

// ownCellID: the request's cell_id is the caller's cell (lists and streams included:
// a cell may not ask for everything).
func ownCellID(c models.Actor, req any) error {
	r, ok := req.(interface{ GetCellId() string })
	if !ok {
		return c.MayActForCell("")
	}
	return c.MayActForCell(r.GetCellId())
}

// ownPresence: the heartbeat is the caller's cell's.
func ownPresence(c models.Actor, req any) error {
	r, _ := req.(*bbsv1.HeartbeatCellRequest)
	return c.MayActForCell(r.GetCellPresence().GetCellId())
}

// ownLock lets operators use any lock and the auctioneer, the converger and the
// route-emitter their own (lockKeys).
func ownLock() authz.Rule {
	return authz.Rule{
		Roles: []authz.Role{operator, auctioneer, converger, routeEmitter},
		Check: func(id authz.Identity, req any) error {
			key := ""
			if r, ok := req.(interface{ GetKey() string }); ok {
				key = r.GetKey()
			}
			if id.Role == operator || key == lockKeys[id.Role] {
				return nil
			}
			return models.NewError(models.ErrTypeUnauthorized, "%s may not use lock %q, only %q", id, key, lockKeys[id.Role])
		},
	}
}

// NewGuard makes the guard of the BBS's gRPC servers with Policy.
func NewGuard(names authz.Names, logger *slog.Logger, reg prometheus.Registerer) (*authz.Guard, error) {
	return authz.NewGuard(authz.GuardOptions{Names: names, Policy: Policy(), Logger: logger, Registerer: reg})
}

// InProcessIdentity is who calls the in-process gRPC server behind the HTTP API, which
// admits operators only (OperatorsOnlyHTTP).
func InProcessIdentity() authz.Identity {
	return authz.Identity{Role: operator, CommonName: "in-process HTTP API"}
}

// OperatorsOnlyHTTP refuses an HTTPS request whose client certificate is not an
// operator's: the HTTP API is for people and bridges; components use gRPC. A request
// without TLS (tests serving the handler directly) passes.
func OperatorsOnlyHTTP(names authz.Names) func(*http.Request) error {
	return func(r *http.Request) error {
		if r.TLS == nil {
			return nil
		}
		var chain []*x509.Certificate
		if len(r.TLS.VerifiedChains) > 0 {
			chain = r.TLS.VerifiedChains[0]
		}
		id, err := names.Identify(chain)
		if err != nil {
			return models.NewError(models.ErrTypeUnauthorized, "%s may not use the HTTP API: %v", id, err)
		}
		if id.Role != operator {
			return models.NewError(models.ErrTypeUnauthorized, "%s may not use the HTTP API", id)
		}
		return nil
	}
}

// dbFor is the store as the caller of ctx may use it: a cell's view (store.DB.ForCell)
// for a cell, the whole store for everyone else (the guard admitted them by role).
// Handlers a cell may call use it for every store call.
func (s *Server) dbFor(ctx context.Context) store.DB {
	if id, ok := authz.FromContext(ctx); ok && id.Role == cell {
		return s.db.ForCell(id.Cell)
	}
	return s.db
}

// eventScope is what the caller of ctx may see of the event stream: a cell its own
// instances' events and its tasks' (no DesiredLRP events: they carry every app's run
// info), everyone else what they asked for.
func eventScope(ctx context.Context, cellID string) (string, func(*modelsv1.Event) bool) {
	id, ok := authz.FromContext(ctx)
	if !ok || id.Role != cell {
		return cellID, func(*modelsv1.Event) bool { return true }
	}
	return id.Cell, func(e *modelsv1.Event) bool { return cellMaySee(e, id.Cell) }
}

// cellMaySee reports whether an event concerns cell: an instance event of its cell, or
// a task event of a task on it before or after the change.
func cellMaySee(e *modelsv1.Event, cell string) bool {
	switch p := e.GetPayload().(type) {
	case *modelsv1.Event_TaskCreated:
		return p.TaskCreated.GetTask().GetCellId() == cell
	case *modelsv1.Event_TaskChanged:
		return p.TaskChanged.GetBefore().GetCellId() == cell || p.TaskChanged.GetAfter().GetCellId() == cell
	case *modelsv1.Event_TaskRemoved:
		return p.TaskRemoved.GetTask().GetCellId() == cell
	case *modelsv1.Event_DesiredLrpCreated, *modelsv1.Event_DesiredLrpChanged, *modelsv1.Event_DesiredLrpRemoved:
		return false
	}
	for _, c := range models.EventCellIDs(e) {
		if c == cell {
			return true
		}
	}
	return false
}
