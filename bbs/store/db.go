// Package store keeps all BBS state in Postgres (pgx/v5). Every write runs in one
// transaction with row locks, checks the transition against the models' state
// machines, bumps the modification tag and appends its events in the same
// transaction; errors are *models.Error values.
package store

import (
	"context"
	"time"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// DesiredLRPFilter selects DesiredLRPs; empty fields match everything.
type DesiredLRPFilter struct {
	Domain       string
	ProcessGuids []string
}

// ActualLRPFilter selects ActualLRP rows (all presences); empty fields match everything.
type ActualLRPFilter struct {
	Domain      string
	CellID      string
	ProcessGuid string
	Index       *int32
}

// TaskFilter selects tasks; empty fields match everything.
type TaskFilter struct {
	Domain string
	CellID string
}

// DesiredLRPChange is what a desire, update or remove did, for the caller's side effects.
type DesiredLRPChange struct {
	Before *modelsv1.DesiredLRP // nil on desire
	After  *modelsv1.DesiredLRP // nil on remove
	// Created are the new UNCLAIMED rows that must be auctioned.
	Created []*modelsv1.ActualLRP
	// ToStop are CLAIMED or RUNNING rows whose rep must be asked to stop them.
	ToStop []*modelsv1.ActualLRP
}

// ActualLRPChange is the row before and after a lifecycle call. Before is nil when the
// row was created; After is nil when it was deleted. Both equal when nothing changed.
type ActualLRPChange struct {
	Before *modelsv1.ActualLRP
	After  *modelsv1.ActualLRP
}

// CrashResult is what a crash report did.
type CrashResult struct {
	ActualLRPChange
	// Restart is true when the instance went straight back to UNCLAIMED and must be auctioned.
	Restart bool
}

// StartOptions are the optional parts of a start report.
type StartOptions struct {
	InternalRoutes   []string
	MetricTags       map[string]string
	Routable         bool
	AvailabilityZone string
}

// TaskChange is a task before and after a lifecycle call.
type TaskChange struct {
	Before *modelsv1.Task
	After  *modelsv1.Task
}

// DB is everything the BBS server needs from storage. *Postgres implements it.
type DB interface {
	DesiredLRPDB
	ActualLRPDB
	TaskDB
	DomainDB
	CellDB
	LockDB
	EventDB
	ConvergenceDB
	EvacuationDB
	TaskConvergenceDB
	ConvergerStateDB
	CordonDB
	// ForCell is the store as a cell may use it (see Postgres.ForCell).
	ForCell(cellID string) DB
}

// DesiredLRPDB stores DesiredLRPs. Desire, update and remove create and delete the
// matching ActualLRP rows in the same transaction.
type DesiredLRPDB interface {
	// DesireLRP inserts the LRP (ErrResourceExists if its guid is taken) and one UNCLAIMED
	// row per index. The LRP must already be validated.
	DesireLRP(ctx context.Context, lrp *modelsv1.DesiredLRP) (*DesiredLRPChange, error)
	// UpdateDesiredLRP applies a validated update. Scaling down deletes UNCLAIMED and
	// CRASHED extras at once and returns CLAIMED/RUNNING extras in ToStop.
	UpdateDesiredLRP(ctx context.Context, processGuid string, update *modelsv1.DesiredLRPUpdate) (*DesiredLRPChange, error)
	// RemoveDesiredLRP deletes the LRP and its unplaced rows; placed rows come back in ToStop.
	RemoveDesiredLRP(ctx context.Context, processGuid string) (*DesiredLRPChange, error)
	GetDesiredLRP(ctx context.Context, processGuid string) (*modelsv1.DesiredLRP, error)
	ListDesiredLRPs(ctx context.Context, f DesiredLRPFilter) ([]*modelsv1.DesiredLRP, error)
	// ListSchedulingInfos never reads or decrypts run info.
	ListSchedulingInfos(ctx context.Context, f DesiredLRPFilter) ([]*modelsv1.DesiredLRPSchedulingInfo, error)
	ListRoutingInfos(ctx context.Context, processGuids []string) ([]*modelsv1.DesiredLRPRoutingInfo, error)
}

// ActualLRPDB moves ActualLRP rows through the state machine of models.
type ActualLRPDB interface {
	// ListActualLRPs returns matching rows ordered by process guid, index, presence.
	ListActualLRPs(ctx context.Context, f ActualLRPFilter) ([]*modelsv1.ActualLRP, error)
	GetActualLRP(ctx context.Context, processGuid string, index int32, presence modelsv1.ActualLRPPresence) (*modelsv1.ActualLRP, error)
	ClaimActualLRP(ctx context.Context, processGuid string, index int32, ik *modelsv1.ActualLRPInstanceKey) (*ActualLRPChange, error)
	StartActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo, opts StartOptions) (*ActualLRPChange, error)
	CrashActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, reason string) (*CrashResult, error)
	FailActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, reason string) (*ActualLRPChange, error)
	// RemoveActualLRP deletes the ORDINARY row; a non-nil ik must match the stored key.
	RemoveActualLRP(ctx context.Context, processGuid string, index int32, ik *modelsv1.ActualLRPInstanceKey) (*ActualLRPChange, error)
	// RetireActualLRP, in one transaction, deletes the ORDINARY row of an index if it is
	// unplaced, or returns it unchanged if it is CLAIMED or RUNNING, for its rep to stop.
	RetireActualLRP(ctx context.Context, processGuid string, index int32) (toStop *modelsv1.ActualLRP, err error)
	// RecordExec appends an exec_started event for the RUNNING instance ik of key's index.
	RecordExec(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, user string, args []string, tty bool) error
}

// TaskDB moves tasks through the task state machine of models.
type TaskDB interface {
	DesireTask(ctx context.Context, guid, domain string, def *modelsv1.TaskDefinition) (*modelsv1.Task, error)
	GetTask(ctx context.Context, guid string) (*modelsv1.Task, error)
	ListTasks(ctx context.Context, f TaskFilter) ([]*modelsv1.Task, error)
	// StartTask reports shouldStart=false, no error, when the task already runs on that cell.
	StartTask(ctx context.Context, guid, cellID string) (change *TaskChange, shouldStart bool, err error)
	CancelTask(ctx context.Context, guid string) (*TaskChange, error)
	FailTask(ctx context.Context, guid, reason string) (*TaskChange, error)
	RejectTask(ctx context.Context, guid, reason string, maxRetries int) (*TaskChange, error)
	CompleteTask(ctx context.Context, guid, cellID string, failed bool, failureReason, result string) (*TaskChange, error)
	ResolvingTask(ctx context.Context, guid string) (*TaskChange, error)
	DeleteTask(ctx context.Context, guid string) (*modelsv1.Task, error)
}

// DomainDB records domain freshness.
type DomainDB interface {
	// UpsertDomain makes the domain fresh for ttl; ttl 0 means forever.
	UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error
	ListFreshDomains(ctx context.Context) ([]string, error)
}

// CellDB records cell presences with a TTL.
type CellDB interface {
	HeartbeatCell(ctx context.Context, p *modelsv1.CellPresence, ttl time.Duration) error
	RemoveCell(ctx context.Context, cellID string) error
	GetCell(ctx context.Context, cellID string) (*modelsv1.CellPresence, error)
	ListLiveCells(ctx context.Context) ([]*modelsv1.CellPresence, error)
}

// LockDB hands out leases.
type LockDB interface {
	// AcquireLock takes a free or expired lock or renews the owner's; ErrLockCollision otherwise.
	AcquireLock(ctx context.Context, key, owner, value string, ttl time.Duration) (*modelsv1.Lock, error)
	ReleaseLock(ctx context.Context, key, owner string) error
	FetchLock(ctx context.Context, key string) (*modelsv1.Lock, error)
	ListLocks(ctx context.Context) ([]*modelsv1.Lock, error)
}

// EventDB reads the event log that every write appends to.
type EventDB interface {
	// EventsAfter returns up to limit events with sequence > after, in sequence order.
	// It returns ErrResyncRequired when events after `after` were already pruned.
	EventsAfter(ctx context.Context, after uint64, limit int) ([]*modelsv1.Event, error)
	// EventPage is EventsAfter with a byte budget as well: it stops before the event whose
	// stored payload would take the page past maxBytes, but returns at least one event.
	EventPage(ctx context.Context, after uint64, limit, maxBytes int) ([]*modelsv1.Event, error)
	// LatestSequence is the sequence of the newest committed event (0 if none).
	LatestSequence(ctx context.Context) (uint64, error)
	// WaitForEvents blocks on LISTEN until a NOTIFY says new events committed, then calls
	// notify with the newest sequence it announced; it returns when ctx ends.
	WaitForEvents(ctx context.Context, notify func(latest uint64)) error
	// PruneEvents deletes events older than the given age, keeping at least keep events.
	PruneEvents(ctx context.Context, olderThan time.Duration, keep int) (int64, error)
}

// ConvergenceDB reads everything the converger decides on.
type ConvergenceDB interface {
	// Snapshot reads, in one REPEATABLE READ, READ ONLY transaction, the fresh domains,
	// live cells, scheduling infos, actual LRPs and tasks (definitions reduced to the
	// completion callback URL) and hands them to emit: first one message with taken_at,
	// domains, cells (with their cordons) and the converger's pause flag, then batches
	// of at most SnapshotBatchSize rows. Rows are streamed, never all held at once. An
	// error from emit ends the snapshot and is returned unchanged.
	Snapshot(ctx context.Context, emit func(*bbsv1.SnapshotResponse) error) error
	// ApplyLRPAction applies one convergence action in one transaction while its rows
	// still match its condition; otherwise it changes nothing and says why in Refused.
	ApplyLRPAction(ctx context.Context, action *bbsv1.LRPAction) (*LRPActionOutcome, error)
}
