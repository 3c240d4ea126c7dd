package server_test

import (
	"fmt"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

const testDomain = "cf-apps"

// runAction is a valid action tree.
func runAction() *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
		Path: "/bin/sh", Args: []string{"-c", "sleep 1000"}, User: "vcap",
	}}}
}

// desiredLRP is a valid DesiredLRP with the given instance count.
func desiredLRP(guid string, instances int32) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid: guid,
		Domain:      testDomain,
		Instances:   instances,
		Rootfs:      "preloaded:cflinuxfs4",
		MemoryMb:    128,
		DiskMb:      256,
		Action:      runAction(),
		LogGuid:     "log-" + guid,
		Annotation:  "annotated",
		Ports:       []uint32{8080},
	}
}

// taskDefinition is a valid task definition with an optional callback URL.
func taskDefinition(callbackURL string) *modelsv1.TaskDefinition {
	return &modelsv1.TaskDefinition{
		Rootfs:                "preloaded:cflinuxfs4",
		Action:                runAction(),
		MemoryMb:              64,
		DiskMb:                64,
		CompletionCallbackUrl: callbackURL,
		Annotation:            "task annotation",
	}
}

// instanceKey names instance i of a guid on a cell.
func instanceKey(guid string, index int32, cellID string) *modelsv1.ActualLRPInstanceKey {
	return &modelsv1.ActualLRPInstanceKey{InstanceGuid: fmt.Sprintf("%s-%d-instance", guid, index), CellId: cellID}
}

// registerCell heartbeats a cell whose rep is the harness's fake rep.
func (h *harness) registerCell(cellID string) {
	h.t.Helper()
	_, err := h.client.HeartbeatCell(h.ctx(), &bbsv1.HeartbeatCellRequest{
		CellPresence: &modelsv1.CellPresence{
			CellId:     cellID,
			RepAddress: h.rep.address,
			Zone:       "z1",
			Capacity:   &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Containers: 10},
		},
		TtlSeconds: 60,
	})
	require.NoError(h.t, err)
}

// desire desires a valid LRP.
func (h *harness) desire(guid string, instances int32) {
	h.t.Helper()
	_, err := h.client.DesireLRP(h.ctx(), &bbsv1.DesireLRPRequest{DesiredLrp: desiredLRP(guid, instances)})
	require.NoError(h.t, err)
}

// claim claims an index on a cell.
func (h *harness) claim(guid string, index int32, cellID string) {
	h.t.Helper()
	_, err := h.client.ClaimActualLRP(h.ctx(), &bbsv1.ClaimActualLRPRequest{
		ProcessGuid: guid, Index: index, ActualLrpInstanceKey: instanceKey(guid, index, cellID),
	})
	require.NoError(h.t, err)
}

// start reports an index RUNNING on a cell.
func (h *harness) start(guid string, index int32, cellID string) {
	h.t.Helper()
	_, err := h.client.StartActualLRP(h.ctx(), &bbsv1.StartActualLRPRequest{
		ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: index, Domain: testDomain},
		ActualLrpInstanceKey: instanceKey(guid, index, cellID),
		ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{
			Address: "10.0.0.1",
			Ports:   []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61000 + uint32(index)}},
		},
	})
	require.NoError(h.t, err)
}

// actual fetches the ordinary row of an index, or nil if there is none.
func (h *harness) actual(guid string, index int32) *modelsv1.ActualLRP {
	h.t.Helper()
	rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: guid, Index: &index})
	for _, r := range rows {
		if r.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY {
			return r
		}
	}
	return nil
}

// indicesOf lists the indices of rows, in order.
func indicesOf(rows []*modelsv1.ActualLRP) []int32 {
	indices := make([]int32, 0, len(rows))
	for _, r := range rows {
		indices = append(indices, r.GetIndex())
	}
	return indices
}

// desireTask desires a valid task.
func (h *harness) desireTask(guid, callbackURL string) {
	h.t.Helper()
	_, err := h.client.DesireTask(h.ctx(), &bbsv1.DesireTaskRequest{
		TaskGuid: guid, Domain: testDomain, TaskDefinition: taskDefinition(callbackURL),
	})
	require.NoError(h.t, err)
}

// task fetches a task.
func (h *harness) task(guid string) (*modelsv1.Task, error) {
	resp, err := h.client.GetTask(h.ctx(), &bbsv1.GetTaskRequest{TaskGuid: guid})
	return resp.GetTask(), err
}
