package output

import (
	"encoding/json"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// CellState is a live cell and what its rep answered to State (or the error).
type CellState struct {
	Cell  *modelsv1.CellPresence
	State *repv1.StateResponse
	Err   error
}

// CellStateTable lists each cell's available/total resources and what it holds.
func CellStateTable(rows []CellState) *Table {
	t := NewTable("CELL_ID", "ZONE", "MEMORY_MB", "DISK_MB", "CONTAINERS", "LRPS", "TASKS", "STARTING", "EVACUATING", "ERROR")
	for _, r := range rows {
		if r.Err != nil || r.State == nil {
			msg := "no state"
			if r.Err != nil {
				msg = r.Err.Error()
			}
			t.Add(r.Cell.GetCellId(), r.Cell.GetZone(), Empty, Empty, Empty, Empty, Empty, Empty, Empty, msg)
			continue
		}
		avail, total := r.State.GetAvailableResources(), r.State.GetTotalResources()
		t.Add(
			r.Cell.GetCellId(),
			r.State.GetZone(),
			ratio(int64(avail.GetMemoryMb()), int64(total.GetMemoryMb())),
			ratio(int64(avail.GetDiskMb()), int64(total.GetDiskMb())),
			ratio(int64(avail.GetContainers()), int64(total.GetContainers())),
			strconv.Itoa(len(r.State.GetLrps())),
			strconv.Itoa(len(r.State.GetTasks())),
			strconv.Itoa(int(r.State.GetStartCount())),
			strconv.FormatBool(r.State.GetEvacuating()),
			Empty,
		)
	}
	return t
}

// ratio is "available/total".
func ratio(available, total int64) string {
	return strconv.FormatInt(available, 10) + "/" + strconv.FormatInt(total, 10)
}

// CellStateView is the JSON line of one cell: its id, the rep's State in protobuf JSON
// (snake_case), or the error.
func CellStateView(r CellState) (any, error) {
	view := map[string]any{"cell_id": r.Cell.GetCellId(), "rep_address": r.Cell.GetRepAddress()}
	if r.Err != nil {
		view["error"] = r.Err.Error()
		return view, nil
	}
	data, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(r.State)
	if err != nil {
		return nil, err
	}
	view["state"] = json.RawMessage(data)
	return view, nil
}
