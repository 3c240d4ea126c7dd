package jsonapi_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestActualLRPView(t *testing.T) {
	tests := []struct {
		name string
		lrp  *modelsv1.ActualLRP
		want string
	}{
		{
			name: "running with ports",
			lrp: &modelsv1.ActualLRP{
				ProcessGuid: "some-process-guid", InstanceGuid: "ig", CellId: "cell-1", Domain: "some-domain", Index: 15,
				State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING,
				NetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.10.11.11", InstanceAddress: "10.255.0.2", Ports: []*modelsv1.PortMapping{
					{ContainerPort: 8080, HostPort: 60001}, {ContainerPort: 5000, HostPort: 60002},
				}},
				Since: 1234567, Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, Routable: true,
				AvailabilityZone: "z1", ModificationTag: &modelsv1.ModificationTag{Epoch: "e", Index: 3},
			},
			want: `{"process_guid": "some-process-guid", "instance_guid": "ig", "cell_id": "cell-1", "domain": "some-domain",
				"index": 15, "state": "RUNNING", "address": "10.10.11.11",
				"ports": [{"container_port": 8080, "host_port": 60001}, {"container_port": 5000, "host_port": 60002}],
				"instance_address": "10.255.0.2", "since": 1234567, "presence": "ORDINARY", "routable": true,
				"availability_zone": "z1", "modification_tag": {"epoch": "e", "index": 3}}`,
		},
		{
			name: "unclaimed index 0 with a placement error",
			lrp: &modelsv1.ActualLRP{
				ProcessGuid: "p", Domain: "d", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED,
				PlacementError: "insufficient resources", Since: 5, Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY,
			},
			want: `{"process_guid": "p", "domain": "d", "index": 0, "state": "UNCLAIMED",
				"placement_error": "insufficient resources", "since": 5, "presence": "ORDINARY", "routable": false}`,
		},
		{
			name: "crashed evacuating",
			lrp: &modelsv1.ActualLRP{
				ProcessGuid: "p", Domain: "d", Index: 2, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED,
				CrashCount: 3, CrashReason: "exit 1", Since: 9, Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING,
			},
			want: `{"process_guid": "p", "domain": "d", "index": 2, "state": "CRASHED", "crash_count": 3,
				"crash_reason": "exit 1", "since": 9, "presence": "EVACUATING", "routable": false}`,
		},
		{
			name: "nil",
			lrp:  nil,
			want: `{"process_guid": "", "domain": "", "index": 0, "state": "UNSPECIFIED", "since": 0,
				"presence": "UNSPECIFIED", "routable": false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(jsonapi.ActualLRPView(tt.lrp))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(out))
		})
	}
}

func TestTaskView(t *testing.T) {
	tests := []struct {
		name string
		task *modelsv1.Task
		want string
	}{
		{
			name: "completed with definition",
			task: &modelsv1.Task{
				TaskGuid: "t1", Domain: "d", State: modelsv1.TaskState_TASK_STATE_COMPLETED, CellId: "c",
				Result: "ok", Failed: true, FailureReason: "boom", RejectionCount: 1, RejectionReason: "full",
				CreatedAt: 1, UpdatedAt: 2, FirstCompletedAt: 3,
				TaskDefinition: &modelsv1.TaskDefinition{Rootfs: "docker:///busybox",
					Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "root"}}}},
			},
			want: `{"task_guid": "t1", "domain": "d", "state": "COMPLETED", "cell_id": "c", "result": "ok",
				"failed": true, "failure_reason": "boom", "rejection_count": 1, "rejection_reason": "full",
				"created_at": 1, "updated_at": 2, "first_completed_at": 3,
				"task_definition": {"rootfs": "docker:///busybox", "action": {"run": {"path": "/bin/true", "user": "root"}}}}`,
		},
		{
			name: "pending without definition",
			task: &modelsv1.Task{TaskGuid: "t2", Domain: "d", State: modelsv1.TaskState_TASK_STATE_PENDING, CreatedAt: 7, UpdatedAt: 7},
			want: `{"task_guid": "t2", "domain": "d", "state": "PENDING", "failed": false, "created_at": 7, "updated_at": 7}`,
		},
		{
			name: "nil",
			task: nil,
			want: `{"task_guid": "", "domain": "", "state": "UNSPECIFIED", "failed": false, "created_at": 0, "updated_at": 0}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view, err := jsonapi.TaskView(tt.task)
			require.NoError(t, err)
			out, err := json.Marshal(view)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(out))
		})
	}
}

func TestCellView(t *testing.T) {
	cell := &modelsv1.CellPresence{
		CellId: "cell-1", RepAddress: "10.0.0.1:1800", RepUrl: "https://cell-1:1801", Zone: "z1",
		Capacity: &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Containers: 10},
		RootfsProviders: []*modelsv1.RootFSProvider{
			{Name: "preloaded", Properties: []string{"cflinuxfs4"}}, {Name: "docker"},
		},
		PlacementTags: []string{"a"}, OptionalPlacementTags: []string{"b"},
		Annotations: map[string]string{"k": "v"}, ExpiresAt: 99,
	}
	out, err := json.Marshal(jsonapi.CellView(cell))
	require.NoError(t, err)
	require.JSONEq(t, `{"cell_id": "cell-1", "rep_address": "10.0.0.1:1800", "rep_url": "https://cell-1:1801",
		"zone": "z1", "capacity": {"memory_mb": 1024, "disk_mb": 2048, "containers": 10},
		"rootfs_providers": [{"name": "preloaded", "properties": ["cflinuxfs4"]}, {"name": "docker"}],
		"placement_tags": ["a"], "optional_placement_tags": ["b"], "annotations": {"k": "v"}, "expires_at": 99}`, string(out))

	out, err = json.Marshal(jsonapi.CellView(nil))
	require.NoError(t, err)
	require.JSONEq(t, `{"cell_id": "", "rep_address": "", "capacity": {"memory_mb": 0, "disk_mb": 0, "containers": 0},
		"expires_at": 0}`, string(out))
}

func TestErrorView(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want jsonapi.Error
	}{
		{"typed", models.NewError(models.ErrTypeResourceNotFound, "no lrp %q", "p"), jsonapi.Error{Type: "ResourceNotFound", Message: `no lrp "p"`}},
		{"across gRPC", status.Convert(models.ErrLockCollision).Err(), jsonapi.Error{Type: "LockCollision", Message: models.ErrLockCollision.Message}},
		{"bare gRPC code", status.Error(codes.Unavailable, "down"), jsonapi.Error{Type: "Unavailable", Message: "down"}},
		{"plain", errors.New("disk on fire"), jsonapi.Error{Type: "UnknownError", Message: "disk on fire"}},
		{"nil", nil, jsonapi.Error{Type: "UnknownError", Message: "no error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, jsonapi.ErrorView(tt.err))
		})
	}
}
