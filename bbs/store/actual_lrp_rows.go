package store

import (
	"context"
	"fmt"
	"sort"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

// actualColumns are the columns of actual_lrps in the order scanActualLRP reads them.
const actualColumns = `process_guid, instance_index, presence, domain, state, instance_guid,
    cell_id, net_info, crash_count, crash_reason, placement_error, since,
    modification_tag_epoch, modification_tag_index, routable, availability_zone,
    internal_routes, metric_tags`

const (
	insertActualSQL = `INSERT INTO actual_lrps (` + actualColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
ON CONFLICT DO NOTHING`
	updateActualSQL = `UPDATE actual_lrps SET domain = $4, state = $5, instance_guid = $6,
    cell_id = $7, net_info = $8, crash_count = $9, crash_reason = $10, placement_error = $11,
    since = $12, modification_tag_epoch = $13, modification_tag_index = $14, routable = $15,
    availability_zone = $16, internal_routes = $17, metric_tags = $18
WHERE process_guid = $1 AND instance_index = $2 AND presence = $3`
	deleteActualSQL = `DELETE FROM actual_lrps WHERE process_guid = $1 AND instance_index = $2 AND presence = $3`
)

// mergeOptions decodes the metric_tags column, an ActualLRP message holding only metric
// tags, straight into the row being scanned.
var mergeOptions = proto.UnmarshalOptions{Merge: true}

// scanActualLRP reads actualColumns. It is on the hot path of listing 100k rows: plain
// columns, binary scanning, and net info as unencrypted protobuf.
func scanActualLRP(row pgx.Row) (*modelsv1.ActualLRP, error) {
	a := &modelsv1.ActualLRP{ModificationTag: &modelsv1.ModificationTag{}}
	var presence, state int16
	var modIndex int64
	var netInfo, tags []byte
	if err := row.Scan(&a.ProcessGuid, &a.Index, &presence, &a.Domain, &state, &a.InstanceGuid,
		&a.CellId, &netInfo, &a.CrashCount, &a.CrashReason, &a.PlacementError, &a.Since,
		&a.ModificationTag.Epoch, &modIndex, &a.Routable, &a.AvailabilityZone,
		&a.InternalRoutes, &tags); err != nil {
		return nil, err
	}
	a.Presence = modelsv1.ActualLRPPresence(presence)
	a.State = modelsv1.ActualLRPState(state)
	a.ModificationTag.Index = uint32(modIndex)
	a.InternalRoutes = nilIfEmpty(a.InternalRoutes)
	if netInfo != nil {
		a.NetInfo = &modelsv1.ActualLRPNetInfo{}
		if err := proto.Unmarshal(netInfo, a.NetInfo); err != nil {
			return nil, fmt.Errorf("net info of %s/%d: %w", a.ProcessGuid, a.Index, err)
		}
	}
	if len(tags) > 0 {
		if err := mergeOptions.Unmarshal(tags, a); err != nil {
			return nil, fmt.Errorf("metric tags of %s/%d: %w", a.ProcessGuid, a.Index, err)
		}
	}
	return a, nil
}

// actualArgs are the column values of a row in actualColumns order.
func actualArgs(a *modelsv1.ActualLRP) ([]any, error) {
	var netInfo, tags []byte
	var err error
	if a.NetInfo != nil {
		if netInfo, err = proto.Marshal(a.NetInfo); err != nil {
			return nil, fmt.Errorf("marshalling net info: %w", err)
		}
	}
	if len(a.MetricTags) > 0 {
		if tags, err = proto.Marshal(&modelsv1.ActualLRP{MetricTags: a.MetricTags}); err != nil {
			return nil, fmt.Errorf("marshalling metric tags: %w", err)
		}
	}
	return []any{
		a.ProcessGuid, a.Index, int16(a.Presence), a.Domain, int16(a.State), a.InstanceGuid,
		a.CellId, netInfo, a.CrashCount, a.CrashReason, a.PlacementError, a.Since,
		a.GetModificationTag().GetEpoch(), int64(a.GetModificationTag().GetIndex()), a.Routable,
		a.AvailabilityZone, nonNil(a.InternalRoutes), tags,
	}, nil
}

// insertActual inserts a row; a row already at that key makes the transaction retry,
// since it was inserted concurrently after this transaction looked.
func (w *writeTx) insertActual(ctx context.Context, a *modelsv1.ActualLRP) error {
	args, err := actualArgs(a)
	if err != nil {
		return err
	}
	tag, err := w.Exec(ctx, insertActualSQL, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errRetryTransaction
	}
	return nil
}

// updateActual writes every column of a row that keeps its key.
func (w *writeTx) updateActual(ctx context.Context, a *modelsv1.ActualLRP) error {
	args, err := actualArgs(a)
	if err != nil {
		return err
	}
	_, err = w.Exec(ctx, updateActualSQL, args...)
	return err
}

func (w *writeTx) deleteActual(ctx context.Context, a *modelsv1.ActualLRP) error {
	_, err := w.Exec(ctx, deleteActualSQL, a.ProcessGuid, a.Index, int16(a.Presence))
	return err
}

// indexRows are the rows of one index, one per presence.
type indexRows struct {
	ordinary, evacuating, suspect *modelsv1.ActualLRP
}

// lockIndex reads every row of an index FOR UPDATE, in presence order.
func (w *writeTx) lockIndex(ctx context.Context, processGuid string, index int32) (indexRows, error) {
	var rows indexRows
	lrps, err := queryAll(ctx, w, scanActualLRP, `SELECT `+actualColumns+` FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 ORDER BY presence FOR UPDATE`, processGuid, index)
	for _, a := range lrps {
		switch a.Presence {
		case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY:
			rows.ordinary = a
		case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING:
			rows.evacuating = a
		case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT:
			rows.suspect = a
		}
	}
	return rows, err
}

// createUnclaimed inserts ORDINARY UNCLAIMED rows for indices [from, to) that have none,
// each with a fresh epoch, and emits an instance-created event per row.
func (w *writeTx) createUnclaimed(ctx context.Context, lrp *modelsv1.DesiredLRP, from, to int32) ([]*modelsv1.ActualLRP, error) {
	if to <= from {
		return nil, nil
	}
	indices := make([]int32, 0, to-from)
	epochs := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		indices = append(indices, i)
		epochs = append(epochs, uuid.NewString())
	}
	rows, err := w.Query(ctx, `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain,
    state, since, modification_tag_epoch, modification_tag_index)
SELECT $1, i.idx, $2, $3, $4, $5, i.epoch, 0 FROM unnest($6::int[], $7::text[]) AS i(idx, epoch)
ON CONFLICT DO NOTHING
RETURNING `+actualColumns,
		lrp.GetProcessGuid(), int16(modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY), lrp.GetDomain(),
		int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED), w.nowNano(), indices, epochs)
	if err != nil {
		return nil, err
	}
	created, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*modelsv1.ActualLRP, error) { return scanActualLRP(r) })
	if err != nil {
		return nil, err
	}
	sortActual(created)
	for _, a := range created {
		w.emit(models.ActualLRPEvents(nil, a)...)
	}
	return created, nil
}

// retireFrom deletes the UNCLAIMED and CRASHED rows of indices >= from (not EVACUATING
// ones), emitting removed events, and returns the CLAIMED and RUNNING ones, which a rep
// must stop.
func (w *writeTx) retireFrom(ctx context.Context, processGuid string, from int32) ([]*modelsv1.ActualLRP, error) {
	const where = ` WHERE process_guid = $1 AND instance_index >= $2 AND presence <> $3`
	evacuating := int16(modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING)
	locked, err := queryAll(ctx, w, scanActualLRP, `SELECT `+actualColumns+` FROM actual_lrps`+where+
		` ORDER BY instance_index, presence FOR UPDATE`, processGuid, from, evacuating)
	if err != nil {
		return nil, err
	}
	var toStop []*modelsv1.ActualLRP
	for _, a := range locked {
		if isPlaced(a) {
			toStop = append(toStop, a)
		}
	}
	removed, err := queryAll(ctx, w, scanActualLRP, `DELETE FROM actual_lrps`+where+
		` AND state IN ($4, $5) RETURNING `+actualColumns, processGuid, from, evacuating,
		int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED), int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED))
	if err != nil {
		return nil, err
	}
	sortActual(removed)
	for _, a := range removed {
		w.emit(models.ActualLRPEvents(a, nil)...)
	}
	return toStop, nil
}

// isPlaced reports whether a row is on a cell (CLAIMED or RUNNING).
func isPlaced(a *modelsv1.ActualLRP) bool {
	return a.State == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED ||
		a.State == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
}

func sortActual(lrps []*modelsv1.ActualLRP) {
	sort.Slice(lrps, func(i, j int) bool {
		if lrps[i].Index != lrps[j].Index {
			return lrps[i].Index < lrps[j].Index
		}
		return lrps[i].Presence < lrps[j].Presence
	})
}
