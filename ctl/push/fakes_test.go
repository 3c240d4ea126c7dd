package push_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// journal is the ordered record of every call the fakes received, shared by them.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, fmt.Sprintf(format, args...))
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

// index is the position of the first entry starting with prefix, or -1.
func (j *journal) index(prefix string) int {
	for i, e := range j.all() {
		if strings.HasPrefix(e, prefix) {
			return i
		}
	}
	return -1
}

// taskOutcome is how the fake completes the staging task.
type taskOutcome struct {
	failed bool
	reason string
	result string
	// unplaced completes the task without ever giving it a cell.
	unplaced bool
}

// fakeBBS keeps tasks and LRPs in memory. A desired task becomes RUNNING on cell-1 at
// the first GetTask and completes with outcome at the second. Instances come from
// actuals (default: every index RUNNING).
type fakeBBS struct {
	j       *journal
	outcome taskOutcome
	// actuals answers ActualLRPs for the n-th call (from 0) about an LRP.
	actuals func(lrp *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP

	mu       sync.Mutex
	tasks    map[string]*modelsv1.Task
	getTasks map[string]int
	lrps     map[string]*modelsv1.DesiredLRP
	polls    map[string]int
	// desiredTasks are the DesireTask requests received.
	desiredTasks []*bbsv1.DesireTaskRequest
}

func newFakeBBS(j *journal, existing ...*modelsv1.DesiredLRP) *fakeBBS {
	f := &fakeBBS{j: j, tasks: map[string]*modelsv1.Task{}, getTasks: map[string]int{}, lrps: map[string]*modelsv1.DesiredLRP{}, polls: map[string]int{},
		outcome: taskOutcome{result: `{"lifecycle_type":"busybox","detected_type":"static","start_command":"exec httpd -f -v -p $PORT -h /home/vcap/app"}`}}
	for _, l := range existing {
		f.lrps[l.GetProcessGuid()] = l
	}
	return f
}

func notFound(what string) error {
	return models.NewError(models.ErrTypeResourceNotFound, "%s not found", what)
}

func (f *fakeBBS) DesireTask(_ context.Context, req *bbsv1.DesireTaskRequest) error {
	if err := models.ValidateRequest(req); err != nil {
		return err
	}
	f.j.add("DesireTask %s", req.GetTaskGuid())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.desiredTasks = append(f.desiredTasks, req)
	f.tasks[req.GetTaskGuid()] = &modelsv1.Task{TaskGuid: req.GetTaskGuid(), Domain: req.GetDomain(), TaskDefinition: req.GetTaskDefinition(), State: modelsv1.TaskState_TASK_STATE_PENDING}
	return nil
}

func (f *fakeBBS) GetTask(_ context.Context, guid string) (*modelsv1.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[guid]
	if !ok {
		return nil, notFound("task " + guid)
	}
	f.getTasks[guid]++
	switch n := f.getTasks[guid]; {
	case n == 1 && !f.outcome.unplaced && t.State == modelsv1.TaskState_TASK_STATE_PENDING:
		t.State, t.CellId = modelsv1.TaskState_TASK_STATE_RUNNING, "cell-1"
	case n == 2 && t.State < modelsv1.TaskState_TASK_STATE_COMPLETED:
		t.State, t.Failed, t.FailureReason, t.Result = modelsv1.TaskState_TASK_STATE_COMPLETED, f.outcome.failed, f.outcome.reason, f.outcome.result
		f.j.add("TaskCompleted %s", guid)
	}
	return proto.Clone(t).(*modelsv1.Task), nil
}

func (f *fakeBBS) CancelTask(_ context.Context, guid string) error {
	f.j.add("CancelTask %s", guid)
	return f.setTaskState(guid, modelsv1.TaskState_TASK_STATE_COMPLETED)
}

func (f *fakeBBS) ResolvingTask(_ context.Context, guid string) error {
	f.j.add("ResolvingTask %s", guid)
	return f.setTaskState(guid, modelsv1.TaskState_TASK_STATE_RESOLVING)
}

func (f *fakeBBS) setTaskState(guid string, s modelsv1.TaskState) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[guid]
	if !ok {
		return notFound("task " + guid)
	}
	t.State = s
	return nil
}

func (f *fakeBBS) DeleteTask(_ context.Context, guid string) error {
	f.j.add("DeleteTask %s", guid)
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[guid]
	if !ok {
		return notFound("task " + guid)
	}
	if !models.TaskCanBeDeleted(t.GetState()) {
		return models.NewError(models.ErrTypeInvalidStateTransition, "task %s is not resolving", guid)
	}
	delete(f.tasks, guid)
	return nil
}

func (f *fakeBBS) taskCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.tasks)
}

func (f *fakeBBS) DesiredLRPs(_ context.Context, domain string) ([]*modelsv1.DesiredLRP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*modelsv1.DesiredLRP
	for _, l := range f.lrps {
		if l.GetDomain() == domain {
			out = append(out, proto.Clone(l).(*modelsv1.DesiredLRP))
		}
	}
	return out, nil
}

func (f *fakeBBS) DesireLRP(_ context.Context, lrp *modelsv1.DesiredLRP) error {
	if err := models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
		return err
	}
	f.j.add("DesireLRP %s", lrp.GetProcessGuid())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lrps[lrp.GetProcessGuid()] = lrp
	return nil
}

func (f *fakeBBS) UpdateDesiredLRP(_ context.Context, guid string, u *modelsv1.DesiredLRPUpdate) error {
	if err := models.ValidateRequest(&bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: u}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.lrps[guid]
	if !ok {
		return notFound("desired LRP " + guid)
	}
	if u.Instances != nil {
		f.j.add("Scale %s %d", guid, u.GetInstances())
		l.Instances = u.GetInstances()
	}
	if u.GetClearRoutes() {
		f.j.add("ClearRoutes %s", guid)
		l.Routes = nil
	}
	return nil
}

func (f *fakeBBS) RemoveDesiredLRP(_ context.Context, guid string) error {
	f.j.add("RemoveDesiredLRP %s", guid)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.lrps[guid]; !ok {
		return notFound("desired LRP " + guid)
	}
	delete(f.lrps, guid)
	return nil
}

func (f *fakeBBS) lrp(guid string) *modelsv1.DesiredLRP {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lrps[guid]
}

func (f *fakeBBS) ActualLRPs(_ context.Context, guid string) ([]*modelsv1.ActualLRP, error) {
	f.mu.Lock()
	l, ok := f.lrps[guid]
	n := f.polls[guid]
	f.polls[guid]++
	f.mu.Unlock()
	if !ok {
		return nil, nil
	}
	if f.actuals != nil {
		return f.actuals(l, n), nil
	}
	return allRunning(l), nil
}

func allRunning(l *modelsv1.DesiredLRP) []*modelsv1.ActualLRP {
	var out []*modelsv1.ActualLRP
	for i := range l.GetInstances() {
		out = append(out, &modelsv1.ActualLRP{ProcessGuid: l.GetProcessGuid(), Index: i, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING})
	}
	return out
}

// fakeBlobstore knows the files with sha1 in known; a package's sha256 hashes its files.
type fakeBlobstore struct {
	fakeURLs
	j     *journal
	known map[string]bool
	// uploaded are the missing files of each upload.
	uploaded [][]push.Resource
}

func (b *fakeBlobstore) MatchResources(_ context.Context, rs []push.Resource) ([]push.Resource, error) {
	var out []push.Resource
	for _, r := range rs {
		if b.known[r.SHA1] {
			out = append(out, r)
		}
	}
	return out, nil
}

func (b *fakeBlobstore) UploadPackage(_ context.Context, _ string, all, missing []push.Resource) (push.Package, error) {
	b.j.add("UploadPackage %d", len(missing))
	b.uploaded = append(b.uploaded, missing)
	h := sha256.New()
	for _, r := range all {
		fmt.Fprintf(h, "%s %s %d\n", r.Path, r.SHA1, r.Size)
		b.known[r.SHA1] = true
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return push.Package{Key: "packages/" + sum + ".zip", SHA256: sum, ReceivedFiles: len(missing), ReusedFiles: len(all) - len(missing)}, nil
}

func (b *fakeBlobstore) BlobSHA256(_ context.Context, key string) (string, error) {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:]), nil
}

// fakeLogs sends lines once and ends, as a rep does when the container goes: lines
// for tasks, appLines for every instance.
type fakeLogs struct {
	lines    []*repv1.LogLine
	appLines []*repv1.LogLine
}

func (l fakeLogs) FollowInstance(_ context.Context, _ string, index int32, _ string, emit func([]*repv1.LogLine)) error {
	var out []*repv1.LogLine
	for _, line := range l.appLines {
		c := proto.Clone(line).(*repv1.LogLine)
		c.Index = index
		out = append(out, c)
	}
	emit(out)
	return nil
}

func (l fakeLogs) FollowTask(_ context.Context, guid, _ string, emit func([]*repv1.LogLine)) error {
	var out []*repv1.LogLine
	for _, line := range l.lines {
		c := proto.Clone(line).(*repv1.LogLine)
		c.ContainerGuid = guid
		out = append(out, c)
	}
	emit(out)
	return nil
}

// fakeRoutes routes each LRP that has routes in the fake BBS to its running
// instances, after lag polls of the route-emitter for that LRP.
type fakeRoutes struct {
	j    *journal
	bbs  *fakeBBS
	lag  int
	mu   sync.Mutex
	seen map[string]int
	err  error
}

func (r *fakeRoutes) ListRoutes(ctx context.Context, guid string) ([]*routeemitterv1.Route, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.mu.Lock()
	r.seen[guid]++
	n := r.seen[guid]
	r.mu.Unlock()
	l := r.bbs.lrp(guid)
	if l == nil || len(l.GetRoutes()) == 0 && n > r.lag {
		r.j.add("Routes %s none", guid)
		return nil, nil
	}
	if len(l.GetRoutes()) > 0 && n <= r.lag {
		r.j.add("Routes %s none", guid)
		return nil, nil
	}
	actuals, _ := r.bbs.ActualLRPs(ctx, guid)
	route := &routeemitterv1.Route{Hostname: "hello.example.com", ProcessGuid: guid, ContainerPort: 8080}
	for _, a := range actuals {
		route.Endpoints = append(route.Endpoints, &routeemitterv1.RouteEndpoint{Index: a.GetIndex()})
	}
	r.j.add("Routes %s %d", guid, len(route.Endpoints))
	return []*routeemitterv1.Route{route}, nil
}
