package output

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// AppRow is one pushed app as "apps" and "app" show it.
type AppRow struct {
	Name string
	GUID string
	// Versions are the versions' process guids' suffixes, newest first.
	Versions []string
	// ProcessGUIDs are the versions' LRPs, newest first.
	ProcessGUIDs []string
	// Running counts the RUNNING instances of the newest version; Desired is its count.
	Running, Desired int32
	// Hostnames are the routes of the newest version.
	Hostnames []string
	// LastPush is when the newest version was pushed (zero when unknown).
	LastPush time.Time
	// Current is the newest version's LRP.
	Current *modelsv1.DesiredLRP
}

// instances is "running/desired".
func (r AppRow) instances() string { return fmt.Sprintf("%d/%d", r.Running, r.Desired) }

// AppTable lists apps: name, versions, running/desired instances, routes, last push.
func AppTable(apps []AppRow, now time.Time) *Table {
	t := NewTable("NAME", "VERSION", "INSTANCES", "ROUTES", "LAST_PUSH")
	for _, a := range apps {
		t.Add(
			orGUID(a.Name, a.GUID),
			strings.Join(a.Versions, ","),
			a.instances(),
			strings.Join(a.Hostnames, ","),
			ageOf(a.LastPush, now),
		)
	}
	return t
}

// AppProperties is the summary of one app.
func AppProperties(a AppRow, now time.Time) *Properties {
	p := &Properties{}
	p.Add("name", orGUID(a.Name, a.GUID))
	p.Add("app_guid", a.GUID)
	p.Add("version", strings.Join(a.Versions, ","))
	p.Add("process_guid", strings.Join(a.ProcessGUIDs, ","))
	p.Add("instances", a.instances()+" running")
	p.Add("routes", strings.Join(a.Hostnames, ","))
	p.Add("rootfs", a.Current.GetRootfs())
	p.Add("memory_mb", Int(a.Current.GetMemoryMb()))
	p.Add("disk_mb", Int(a.Current.GetDiskMb()))
	p.Add("allow_ssh", strconv.FormatBool(a.Current.GetAllowSsh()))
	last := Empty
	if !a.LastPush.IsZero() {
		last = TimestampWithAge(a.LastPush.UnixNano(), now)
	}
	p.Add("last_push", last)
	return p
}

// AppInstanceTable lists an app's instances: version, index, state, cell, address,
// since, crashes and the reason of the last crash (or why it is not placed).
func AppInstanceTable(lrps []*modelsv1.ActualLRP, now time.Time) *Table {
	t := NewTable("VERSION", "INDEX", "STATE", "CELL", "ADDRESS", "SINCE", "CRASHES", "REASON")
	for _, a := range lrps {
		reason := a.GetCrashReason()
		if pe := a.GetPlacementError(); pe != "" {
			reason = pe
		}
		t.Add(
			versionOf(a.GetProcessGuid()),
			Int(a.GetIndex()),
			ActualLRPStateLabel(a),
			a.GetCellId(),
			a.GetNetInfo().GetAddress(),
			Age(a.GetSince(), now),
			Int(a.GetCrashCount()),
			reason,
		)
	}
	return t
}

// versionOf is what follows the last '-' of a process guid.
func versionOf(processGUID string) string {
	return processGUID[strings.LastIndexByte(processGUID, '-')+1:]
}

// ageOf is Age for a time.
func ageOf(t time.Time, now time.Time) string {
	if t.IsZero() {
		return Empty
	}
	return Age(t.UnixNano(), now)
}

func orGUID(name, guid string) string {
	if name == "" {
		return guid
	}
	return name
}

// AppJSON is the JSON view of an app.
type AppJSON struct {
	Name         string   `json:"name,omitempty"`
	GUID         string   `json:"app_guid"`
	Versions     []string `json:"versions"`
	ProcessGUIDs []string `json:"process_guids"`
	Running      int32    `json:"running_instances"`
	Desired      int32    `json:"instances"`
	Routes       []string `json:"routes"`
	LastPush     string   `json:"last_push,omitempty"`
}

// AppView converts an app row for JSON output.
func AppView(a AppRow) AppJSON {
	v := AppJSON{
		Name: a.Name, GUID: a.GUID, Versions: a.Versions, ProcessGUIDs: a.ProcessGUIDs,
		Running: a.Running, Desired: a.Desired, Routes: a.Hostnames,
	}
	if v.Routes == nil {
		v.Routes = []string{}
	}
	if !a.LastPush.IsZero() {
		v.LastPush = a.LastPush.UTC().Format(time.RFC3339Nano)
	}
	return v
}
