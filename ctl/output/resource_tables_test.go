package output_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/ctl/output"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func nanosAgo(d time.Duration) int64 { return testNow.Add(-d).UnixNano() }

// renderLines renders r and splits it into lines with trailing spaces removed.
func renderLines(t *testing.T, r interface{ Render(w io.Writer) error }) []string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.Render(&b))
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// fieldsOf splits each rendered line into its whitespace-separated words.
func fieldsOf(t *testing.T, table *output.Table) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range renderLines(t, table) {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func TestActualLRPTable(t *testing.T) {
	lrps := []*modelsv1.ActualLRP{
		{
			ProcessGuid: "web", Index: 1, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED,
			Presence:       modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY,
			PlacementError: "insufficient resources: memory", Since: nanosAgo(2 * time.Minute),
		},
		{
			ProcessGuid: "web", Index: 0, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING,
			Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING, CellId: "cell-2",
			NetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.2", Ports: []*modelsv1.PortMapping{
				{ContainerPort: 8080, HostPort: 61001}, {ContainerPort: 2222, HostPort: 61002},
			}},
			CrashCount: 2, CrashReason: "APP/PROC/WEB: Exited with status 1", Since: nanosAgo(90 * time.Second),
		},
		{
			ProcessGuid: "web", Index: 0, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED,
			Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, CellId: "cell-1",
			Since: nanosAgo(3 * time.Second),
		},
		{ProcessGuid: "api", Index: 0, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED},
	}
	output.SortActualLRPs(lrps)
	rows := fieldsOf(t, output.ActualLRPTable(lrps, testNow))
	require.Equal(t, [][]string{
		{"PROCESS_GUID", "INDEX", "STATE", "CELL", "ADDRESS", "PORTS", "CRASHES", "SINCE", "PLACEMENT_ERROR", "REASON"},
		{"api", "0", "CRASHED", "-", "-", "-", "0", "-", "-", "-"},
		{"web", "0", "CLAIMED", "cell-1", "-", "-", "0", "3s", "-", "-"},
		{"web", "0", "RUNNING", "(EVACUATING)", "cell-2", "10.0.0.2", "8080:61001,2222:61002", "2", "1m30s", "-", "APP/PROC/WEB:", "Exited", "with", "status", "1"},
		{"web", "1", "UNCLAIMED", "-", "-", "-", "0", "2m", "insufficient", "resources:", "memory", "-"},
	}, rows)
}

func TestDesiredLRPTableAndProperties(t *testing.T) {
	routes := map[string]*structpb.Value{
		"cf-router":  structpb.NewListValue(&structpb.ListValue{}),
		"tcp-router": structpb.NewStringValue("x"),
	}
	lrp := &modelsv1.DesiredLRP{
		ProcessGuid: "web", Domain: "cf-apps", Instances: 3, Rootfs: "preloaded:cflinuxfs4",
		MemoryMb: 256, DiskMb: 1024, Ports: []uint32{8080, 2222}, Routes: routes,
		CreatedAt: nanosAgo(26 * time.Hour), StartTimeout: 60, Annotation: "v42",
	}
	rows := fieldsOf(t, output.DesiredLRPTable([]*modelsv1.DesiredLRP{lrp, {ProcessGuid: "empty"}}, testNow))
	require.Equal(t, [][]string{
		{"PROCESS_GUID", "DOMAIN", "INSTANCES", "ROOTFS", "MEMORY_MB", "DISK_MB", "PORTS", "ROUTERS", "AGE"},
		{"web", "cf-apps", "3", "preloaded:cflinuxfs4", "256", "1024", "8080,2222", "cf-router,tcp-router", "1d2h"},
		{"empty", "-", "0", "-", "0", "0", "-", "-", "-"},
	}, rows)

	lines := renderLines(t, output.DesiredLRPProperties(lrp, testNow))
	require.Contains(t, lines, "process_guid:    web")
	require.Contains(t, lines, "routers:         cf-router,tcp-router")
	require.Contains(t, lines, "start_timeout:   60s")
	require.Contains(t, lines, "created:         2026-11-21T10:00:00Z (1d2h ago)")
}

func TestClusterTables(t *testing.T) {
	tasks := []*modelsv1.Task{{
		TaskGuid: "t1", Domain: "d", State: modelsv1.TaskState_TASK_STATE_COMPLETED, CellId: "cell-1",
		Failed: true, FailureReason: "exit status 1", UpdatedAt: nanosAgo(10 * time.Second),
	}}
	require.Equal(t, [][]string{
		{"TASK_GUID", "DOMAIN", "STATE", "CELL", "FAILED", "FAILURE_REASON", "UPDATED"},
		{"t1", "d", "COMPLETED", "cell-1", "true", "exit", "status", "1", "10s"},
	}, fieldsOf(t, output.TaskTable(tasks, testNow)))

	cells := []*modelsv1.CellPresence{{
		CellId: "cell-1", Zone: "z1", RepAddress: "10.0.0.1:1800",
		Capacity: &modelsv1.CellCapacity{MemoryMb: 8192, DiskMb: 20000, Containers: 250},
		RootfsProviders: []*modelsv1.RootFSProvider{
			{Name: "preloaded", Properties: []string{"cflinuxfs4", "cflinuxfs3"}}, {Name: "docker"},
		},
		PlacementTags: []string{"gpu"}, OptionalPlacementTags: []string{"ssd"},
		ExpiresAt: testNow.Add(30 * time.Second).UnixNano(),
	}}
	require.Equal(t, [][]string{
		{"CELL_ID", "ZONE", "REP_ADDRESS", "MEMORY_MB", "DISK_MB", "CONTAINERS", "ROOTFS", "PLACEMENT_TAGS", "CORDONED", "EXPIRES", "CORDON_REASON"},
		{"cell-1", "z1", "10.0.0.1:1800", "8192", "20000", "250", "preloaded:cflinuxfs4,preloaded:cflinuxfs3,docker", "gpu,ssd?", "no", "in", "30s", "-"},
	}, fieldsOf(t, output.CellTable(cells, testNow)))
	cells[0].Cordoned, cells[0].CordonReason = true, "disk repair"
	cordoned := fieldsOf(t, output.CellTable(cells, testNow))[1]
	require.Equal(t, "yes", cordoned[8])
	require.Equal(t, []string{"disk", "repair"}, cordoned[11:], "the cordon reason is in the table")
	cellView := output.CellView(cells[0])
	require.Equal(t, "cell-1", cellView.CellID)
	require.True(t, cellView.Cordoned)
	require.Equal(t, "disk repair", cellView.CordonReason)

	locks := []*modelsv1.Lock{{Key: "auctioneer", Owner: "a-1", ExpiresAt: nanosAgo(time.Second)}}
	require.Equal(t, [][]string{
		{"KEY", "OWNER", "VALUE", "EXPIRES"},
		{"auctioneer", "a-1", "-", "expired"},
	}, fieldsOf(t, output.LockTable(locks, testNow)))

	require.Equal(t, output.Lock{Key: "k", Owner: "o", ExpiresAt: "2026-11-22T12:00:00.5Z", ModifiedIndex: 7},
		output.LockView(&modelsv1.Lock{Key: "k", Owner: "o", ExpiresAt: testNow.Add(500 * time.Millisecond).UnixNano(), ModifiedIndex: 7}))

	require.Equal(t, [][]string{{"DOMAIN"}, {"a"}, {"b"}}, fieldsOf(t, output.DomainTable([]string{"a", "b"})))
}

func TestNilModelsRenderWithoutPanicking(t *testing.T) {
	require.Len(t, fieldsOf(t, output.ActualLRPTable([]*modelsv1.ActualLRP{nil}, testNow)), 2)
	require.Len(t, fieldsOf(t, output.DesiredLRPTable([]*modelsv1.DesiredLRP{nil}, testNow)), 2)
	require.Len(t, fieldsOf(t, output.TaskTable([]*modelsv1.Task{nil}, testNow)), 2)
	require.Len(t, fieldsOf(t, output.CellTable([]*modelsv1.CellPresence{nil}, testNow)), 2)
	require.Len(t, fieldsOf(t, output.LockTable([]*modelsv1.Lock{nil}, testNow)), 2)
	require.NotEmpty(t, renderLines(t, output.DesiredLRPProperties(nil, testNow)))
	require.Equal(t, output.Lock{}, output.LockView(nil))
	require.Equal(t, output.Cell{}, output.CellView(nil))
	require.NotEmpty(t, renderLines(t, output.ConvergerStatusProperties(nil, testNow)))
	require.Nil(t, output.ConvergerStatusView(nil).LastPass)
	require.Equal(t, "ORDINARY", output.CountInstances([]*modelsv1.ActualLRP{nil})[0].Presence, "a nil row counts as ordinary")
	output.SortActualLRPs([]*modelsv1.ActualLRP{nil, {ProcessGuid: "a"}, nil})
	require.NotEmpty(t, output.EventLine(nil))
	require.NotEmpty(t, output.EventLine(&modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{}}))
}
