package store

import (
	"context"
	"encoding/json"
	"fmt"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// schedulingColumns are the plain columns of desired_lrps, in the order
// scanSchedulingInfo reads them.
const schedulingColumns = `process_guid, domain, log_guid, annotation, instances, rootfs,
    memory_mb, disk_mb, max_pids, routes, placement_tags, volume_drivers, update_strategy,
    modification_tag_epoch, modification_tag_index`

// desiredColumns are every column a full DesiredLRP needs.
const desiredColumns = schedulingColumns + `, run_info`

const routingColumns = `process_guid, domain, log_guid, instances, routes,
    modification_tag_epoch, modification_tag_index, metric_tags`

// insertDesiredSQL and updateDesiredSQL take the arguments of desiredArgs.
const (
	insertDesiredSQL = `INSERT INTO desired_lrps (process_guid, domain, log_guid, annotation,
    instances, rootfs, memory_mb, disk_mb, max_pids, routes, placement_tags, volume_drivers,
    update_strategy, modification_tag_epoch, modification_tag_index, metric_tags, run_info)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`
	updateDesiredSQL = `UPDATE desired_lrps SET domain = $2, log_guid = $3, annotation = $4,
    instances = $5, rootfs = $6, memory_mb = $7, disk_mb = $8, max_pids = $9, routes = $10,
    placement_tags = $11, volume_drivers = $12, update_strategy = $13,
    modification_tag_epoch = $14, modification_tag_index = $15, metric_tags = $16, run_info = $17
WHERE process_guid = $1`
)

// desiredArgs are the column values of a DesiredLRP for insertDesiredSQL and
// updateDesiredSQL; the run info is encrypted.
func (p *Postgres) desiredArgs(lrp *modelsv1.DesiredLRP) ([]any, error) {
	si := models.SchedulingInfo(lrp)
	routes, err := encodeRoutes(si.GetRoutes())
	if err != nil {
		return nil, err
	}
	tags, err := encodeMetricTags(lrp.GetMetricTags())
	if err != nil {
		return nil, err
	}
	plain, err := proto.Marshal(models.RunInfo(lrp))
	if err != nil {
		return nil, fmt.Errorf("marshalling run info: %w", err)
	}
	runInfo, err := p.crypt.Encrypt(plain)
	if err != nil {
		return nil, err
	}
	return []any{
		si.GetProcessGuid(), si.GetDomain(), si.GetLogGuid(), si.GetAnnotation(), si.GetInstances(),
		si.GetRootfs(), si.GetResource().GetMemoryMb(), si.GetResource().GetDiskMb(),
		si.GetResource().GetMaxPids(), routes, nonNil(si.GetPlacementTags()), nonNil(si.GetVolumeDrivers()),
		int16(si.GetUpdateStrategy()), si.GetModificationTag().GetEpoch(),
		int64(si.GetModificationTag().GetIndex()), tags, runInfo,
	}, nil
}

// scanSchedulingInfo reads schedulingColumns; extra receives any columns that follow.
func scanSchedulingInfo(row pgx.Row, extra ...any) (*modelsv1.DesiredLRPSchedulingInfo, error) {
	si := &modelsv1.DesiredLRPSchedulingInfo{Resource: &modelsv1.Resource{}, ModificationTag: &modelsv1.ModificationTag{}}
	var routes []byte
	var strategy int16
	var modIndex int64
	dest := append([]any{
		&si.ProcessGuid, &si.Domain, &si.LogGuid, &si.Annotation, &si.Instances, &si.Rootfs,
		&si.Resource.MemoryMb, &si.Resource.DiskMb, &si.Resource.MaxPids, &routes,
		&si.PlacementTags, &si.VolumeDrivers, &strategy, &si.ModificationTag.Epoch, &modIndex,
	}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	si.UpdateStrategy = modelsv1.UpdateStrategy(strategy)
	si.ModificationTag.Index = uint32(modIndex)
	var err error
	if si.Routes, err = decodeRoutes(routes); err != nil {
		return nil, fmt.Errorf("desired lrp %q: %w", si.ProcessGuid, err)
	}
	si.PlacementTags = nilIfEmpty(si.PlacementTags)
	si.VolumeDrivers = nilIfEmpty(si.VolumeDrivers)
	return si, nil
}

// scanDesiredLRP reads desiredColumns and decrypts the run info.
func (p *Postgres) scanDesiredLRP(row pgx.Row) (*modelsv1.DesiredLRP, error) {
	var runInfo []byte
	si, err := scanSchedulingInfo(row, &runInfo)
	if err != nil {
		return nil, err
	}
	plain, err := p.crypt.Decrypt(runInfo)
	if err != nil {
		return nil, fmt.Errorf("run info of desired lrp %q: %w", si.ProcessGuid, err)
	}
	ri := &modelsv1.DesiredLRPRunInfo{}
	if err := proto.Unmarshal(plain, ri); err != nil {
		return nil, fmt.Errorf("run info of desired lrp %q: %w", si.ProcessGuid, err)
	}
	return models.DesiredLRPFromViews(si, ri), nil
}

func scanRoutingInfo(row pgx.Row) (*modelsv1.DesiredLRPRoutingInfo, error) {
	ri := &modelsv1.DesiredLRPRoutingInfo{ModificationTag: &modelsv1.ModificationTag{}}
	var routes, tags []byte
	var modIndex int64
	if err := row.Scan(&ri.ProcessGuid, &ri.Domain, &ri.LogGuid, &ri.Instances, &routes,
		&ri.ModificationTag.Epoch, &modIndex, &tags); err != nil {
		return nil, err
	}
	ri.ModificationTag.Index = uint32(modIndex)
	var err error
	if ri.Routes, err = decodeRoutes(routes); err != nil {
		return nil, fmt.Errorf("desired lrp %q: %w", ri.ProcessGuid, err)
	}
	if ri.MetricTags, err = decodeMetricTags(tags); err != nil {
		return nil, fmt.Errorf("desired lrp %q: %w", ri.ProcessGuid, err)
	}
	return ri, nil
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// encodeRoutes stores routes as one JSON object of router name to opaque JSON.
func encodeRoutes(routes map[string]*structpb.Value) ([]byte, error) {
	if len(routes) == 0 {
		return []byte("{}"), nil
	}
	b, err := protojson.Marshal(&structpb.Struct{Fields: routes})
	if err != nil {
		return nil, fmt.Errorf("encoding routes: %w", err)
	}
	return b, nil
}

func decodeRoutes(b []byte) (map[string]*structpb.Value, error) {
	if len(b) == 0 || string(b) == "{}" {
		return nil, nil
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("decoding routes: %w", err)
	}
	return s.Fields, nil
}

// encodeMetricTags stores metric tags as a JSON object of name to the protojson value.
func encodeMetricTags(tags map[string]*modelsv1.MetricTagValue) ([]byte, error) {
	raw := make(map[string]json.RawMessage, len(tags))
	for name, v := range tags {
		b, err := protojson.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding metric tag %q: %w", name, err)
		}
		raw[name] = b
	}
	return json.Marshal(raw)
}

func decodeMetricTags(b []byte) (map[string]*modelsv1.MetricTagValue, error) {
	if len(b) == 0 || string(b) == "{}" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decoding metric tags: %w", err)
	}
	tags := make(map[string]*modelsv1.MetricTagValue, len(raw))
	for name, r := range raw {
		v := &modelsv1.MetricTagValue{}
		if err := protojson.Unmarshal(r, v); err != nil {
			return nil, fmt.Errorf("decoding metric tag %q: %w", name, err)
		}
		tags[name] = v
	}
	return tags, nil
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
