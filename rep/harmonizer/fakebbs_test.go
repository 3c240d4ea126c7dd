package harmonizer

import (
	"context"
	"fmt"
	"sync"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// fakeBBS is an in-memory BBS: it records each call as a line and fails the calls a
// test names in errs.
type fakeBBS struct {
	mu          sync.Mutex
	calls       []string
	errs        map[string]error // by call name: claim, start, crash, remove, desired, start-task, task, complete, reject, list-lrps, list-tasks, evacuate-claimed, evacuate-running, evacuate-stopped, evacuate-crashed, remove-evacuating
	keep        map[string]bool  // keep_container answers by call name (evacuate-*)
	desired     map[string]*modelsv1.DesiredLRP
	tasks       map[string]*modelsv1.Task
	lrps        []*modelsv1.ActualLRP
	shouldStart bool
	starts      []*bbsv1.StartActualLRPRequest
	completes   []*bbsv1.CompleteTaskRequest
	// evacuateRunning are the EvacuateRunningActualLRP requests received.
	evacuateRunning []*bbsv1.EvacuateRunningActualLRPRequest
}

func newFakeBBS() *fakeBBS {
	return &fakeBBS{errs: map[string]error{}, keep: map[string]bool{}, desired: map[string]*modelsv1.DesiredLRP{}, tasks: map[string]*modelsv1.Task{}, shouldStart: true}
}

func (f *fakeBBS) record(name, line string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, line)
	err := f.errs[name]
	if name == "complete" {
		delete(f.errs, name) // a refused completion is retried once
	}
	return err
}

func (f *fakeBBS) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeBBS) ListActualLRPs(context.Context, string) ([]*modelsv1.ActualLRP, error) {
	if err := f.record("list-lrps", "list-lrps"); err != nil {
		return nil, err
	}
	return f.lrps, nil
}

func (f *fakeBBS) ClaimActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, in *modelsv1.ActualLRPInstanceKey) error {
	return f.record("claim", fmt.Sprintf("claim %s/%d %s@%s", key.GetProcessGuid(), key.GetIndex(), in.GetInstanceGuid(), in.GetCellId()))
}

func (f *fakeBBS) StartActualLRP(_ context.Context, req *bbsv1.StartActualLRPRequest) error {
	f.mu.Lock()
	f.starts = append(f.starts, req)
	f.mu.Unlock()
	return f.record("start", fmt.Sprintf("start %s/%d %s", req.GetActualLrpKey().GetProcessGuid(), req.GetActualLrpKey().GetIndex(), req.GetActualLrpInstanceKey().GetInstanceGuid()))
}

func (f *fakeBBS) CrashActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, in *modelsv1.ActualLRPInstanceKey, reason string) error {
	return f.record("crash", fmt.Sprintf("crash %s/%d %s: %s", key.GetProcessGuid(), key.GetIndex(), in.GetInstanceGuid(), reason))
}

func (f *fakeBBS) RemoveActualLRP(_ context.Context, pg string, index int32, in *modelsv1.ActualLRPInstanceKey) error {
	return f.record("remove", fmt.Sprintf("remove %s/%d %s@%s", pg, index, in.GetInstanceGuid(), in.GetCellId()))
}

func (f *fakeBBS) DesiredLRP(_ context.Context, pg string) (*modelsv1.DesiredLRP, error) {
	if err := f.record("desired", "desired "+pg); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.desired[pg]; ok {
		return d, nil
	}
	return nil, models.ErrResourceNotFound
}

func (f *fakeBBS) ListTasks(context.Context, string) ([]*modelsv1.Task, error) {
	if err := f.record("list-tasks", "list-tasks"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*modelsv1.Task
	for _, t := range f.tasks {
		out = append(out, t)
	}
	return out, nil
}

func (f *fakeBBS) Task(_ context.Context, guid string) (*modelsv1.Task, error) {
	if err := f.record("task", "task "+guid); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tasks[guid]; ok {
		return t, nil
	}
	return nil, models.ErrResourceNotFound
}

func (f *fakeBBS) StartTask(_ context.Context, guid, cell string) (bool, error) {
	if err := f.record("start-task", "start-task "+guid+"@"+cell); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shouldStart, nil
}

func (f *fakeBBS) CompleteTask(_ context.Context, req *bbsv1.CompleteTaskRequest) error {
	f.mu.Lock()
	f.completes = append(f.completes, req)
	f.mu.Unlock()
	return f.record("complete", fmt.Sprintf("complete %s@%s failed=%t reason=%q result=%d bytes", req.GetTaskGuid(), req.GetCellId(), req.GetFailed(), req.GetFailureReason(), len(req.GetResult())))
}

func (f *fakeBBS) RejectTask(_ context.Context, guid, reason string) error {
	return f.record("reject", fmt.Sprintf("reject %s: %s", guid, reason))
}

// SetKeep sets the keep_container answer of an evacuate-* call.
func (f *fakeBBS) SetKeep(name string, keep bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keep[name] = keep
}

// evacuation records an evacuate-* call and answers its keep flag (false on error).
func (f *fakeBBS) evacuation(name, line string) (bool, error) {
	if err := f.record(name, line); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keep[name], nil
}

func (f *fakeBBS) EvacuateClaimedActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, in *modelsv1.ActualLRPInstanceKey) (bool, error) {
	return f.evacuation("evacuate-claimed", fmt.Sprintf("evacuate-claimed %s/%d %s@%s", key.GetProcessGuid(), key.GetIndex(), in.GetInstanceGuid(), in.GetCellId()))
}

func (f *fakeBBS) EvacuateRunningActualLRP(_ context.Context, req *bbsv1.EvacuateRunningActualLRPRequest) (bool, error) {
	f.mu.Lock()
	f.evacuateRunning = append(f.evacuateRunning, req)
	f.mu.Unlock()
	return f.evacuation("evacuate-running", fmt.Sprintf("evacuate-running %s/%d %s@%s", req.GetActualLrpKey().GetProcessGuid(), req.GetActualLrpKey().GetIndex(),
		req.GetActualLrpInstanceKey().GetInstanceGuid(), req.GetActualLrpInstanceKey().GetCellId()))
}

func (f *fakeBBS) EvacuateStoppedActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, in *modelsv1.ActualLRPInstanceKey) (bool, error) {
	return f.evacuation("evacuate-stopped", fmt.Sprintf("evacuate-stopped %s/%d %s@%s", key.GetProcessGuid(), key.GetIndex(), in.GetInstanceGuid(), in.GetCellId()))
}

func (f *fakeBBS) EvacuateCrashedActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, in *modelsv1.ActualLRPInstanceKey, reason string) (bool, error) {
	return f.evacuation("evacuate-crashed", fmt.Sprintf("evacuate-crashed %s/%d %s@%s: %s", key.GetProcessGuid(), key.GetIndex(), in.GetInstanceGuid(), in.GetCellId(), reason))
}

func (f *fakeBBS) RemoveEvacuatingActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, in *modelsv1.ActualLRPInstanceKey) error {
	return f.record("remove-evacuating", fmt.Sprintf("remove-evacuating %s/%d %s@%s", key.GetProcessGuid(), key.GetIndex(), in.GetInstanceGuid(), in.GetCellId()))
}
