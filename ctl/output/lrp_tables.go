package output

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// SortActualLRPs orders rows by process guid, index, then presence.
func SortActualLRPs(lrps []*modelsv1.ActualLRP) {
	slices.SortStableFunc(lrps, func(a, b *modelsv1.ActualLRP) int {
		return cmp.Or(
			cmp.Compare(a.GetProcessGuid(), b.GetProcessGuid()),
			cmp.Compare(a.GetIndex(), b.GetIndex()),
			cmp.Compare(a.GetPresence(), b.GetPresence()),
		)
	})
}

// ActualLRPTable lists instances with where they run and why they are not running:
// the placement error of an unplaced one and the reason of the last crash.
func ActualLRPTable(lrps []*modelsv1.ActualLRP, now time.Time) *Table {
	t := NewTable("PROCESS_GUID", "INDEX", "STATE", "CELL", "ADDRESS", "PORTS", "CRASHES", "SINCE", "PLACEMENT_ERROR", "REASON")
	for _, a := range lrps {
		t.Add(
			a.GetProcessGuid(),
			Int(a.GetIndex()),
			ActualLRPStateLabel(a),
			a.GetCellId(),
			a.GetNetInfo().GetAddress(),
			PortMappings(a.GetNetInfo().GetPorts()),
			Int(a.GetCrashCount()),
			Age(a.GetSince(), now),
			a.GetPlacementError(),
			a.GetCrashReason(),
		)
	}
	return t
}

// ActualLRPStateLabel is the state name, followed by the presence when the row is
// not the ordinary one ("RUNNING (EVACUATING)").
func ActualLRPStateLabel(a *modelsv1.ActualLRP) string {
	label := models.StateName(a.GetState())
	switch a.GetPresence() {
	case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY:
		return label
	default:
		return label + " (" + models.PresenceName(a.GetPresence()) + ")"
	}
}

// DesiredLRPTable lists DesiredLRPs with their size and routing.
func DesiredLRPTable(lrps []*modelsv1.DesiredLRP, now time.Time) *Table {
	t := NewTable("PROCESS_GUID", "DOMAIN", "INSTANCES", "ROOTFS", "MEMORY_MB", "DISK_MB", "PORTS", "ROUTERS", "AGE")
	for _, d := range lrps {
		t.Add(
			d.GetProcessGuid(),
			d.GetDomain(),
			Int(d.GetInstances()),
			d.GetRootfs(),
			Int(d.GetMemoryMb()),
			Int(d.GetDiskMb()),
			Uints(d.GetPorts()),
			RouterNames(d),
			Age(d.GetCreatedAt(), now),
		)
	}
	return t
}

// DesiredLRPProperties is the summary of one DesiredLRP.
func DesiredLRPProperties(d *modelsv1.DesiredLRP, now time.Time) *Properties {
	p := &Properties{}
	p.Add("process_guid", d.GetProcessGuid())
	p.Add("domain", d.GetDomain())
	p.Add("instances", Int(d.GetInstances()))
	p.Add("rootfs", d.GetRootfs())
	p.Add("memory_mb", Int(d.GetMemoryMb()))
	p.Add("disk_mb", Int(d.GetDiskMb()))
	p.Add("cpu_weight", Int(d.GetCpuWeight()))
	p.Add("max_pids", Int(d.GetMaxPids()))
	p.Add("privileged", strconv.FormatBool(d.GetPrivileged()))
	p.Add("ports", Uints(d.GetPorts()))
	p.Add("routers", RouterNames(d))
	p.Add("placement_tags", strings.Join(d.GetPlacementTags(), ","))
	p.Add("start_timeout", Int(d.GetStartTimeout())+"s")
	p.Add("log_guid", d.GetLogGuid())
	p.Add("metrics_guid", d.GetMetricsGuid())
	p.Add("annotation", d.GetAnnotation())
	p.Add("created", TimestampWithAge(d.GetCreatedAt(), now))
	return p
}

// RouterNames lists the keys of a DesiredLRP's routes, sorted.
func RouterNames(d *modelsv1.DesiredLRP) string {
	names := make([]string, 0, len(d.GetRoutes()))
	for name := range d.GetRoutes() {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
