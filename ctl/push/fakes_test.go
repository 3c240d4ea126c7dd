package push_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
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

// fakeBBS keeps LRPs in memory. Instances come from actuals (default: every index
// RUNNING).
type fakeBBS struct {
	j *journal
	// actuals answers ActualLRPs for the n-th call (from 0) about an LRP.
	actuals func(lrp *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP

	mu    sync.Mutex
	lrps  map[string]*modelsv1.DesiredLRP
	polls map[string]int
}

func newFakeBBS(j *journal, existing ...*modelsv1.DesiredLRP) *fakeBBS {
	f := &fakeBBS{j: j, lrps: map[string]*modelsv1.DesiredLRP{}, polls: map[string]int{}}
	for _, l := range existing {
		f.lrps[l.GetProcessGuid()] = l
	}
	return f
}

func notFound(what string) error {
	return models.NewError(models.ErrTypeResourceNotFound, "%s not found", what)
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

// fakeLogs sends appLines to every instance once and ends, as a rep does when the
// container goes.
type fakeLogs struct {
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

// fakeStager answers Stage with the events of stage (default: started, two log lines
// and a result for the request's droplet key), or with err; ListStacks with stacks.
type fakeStager struct {
	j      *journal
	stage  func(req *stagerv1.StageRequest) []*stagerv1.StageResponse
	err    error
	stacks []*stagerv1.Stack
	// cut ends the stream with an error instead of EOF after the events.
	cut error

	mu       sync.Mutex
	requests []*stagerv1.StageRequest
}

// stagedResult is the result the default fake stager answers for req.
func stagedResult(req *stagerv1.StageRequest) *stagerv1.StagingResult {
	return &stagerv1.StagingResult{
		TaskGuid: "staging-task-1", DropletKey: req.GetDropletKey(), DropletSha256: strings.Repeat("d", 64), DropletSize: 1234,
		Buildpack: "staticfile", Buildpacks: []string{"staticfile"}, StartCommand: "./start-nginx",
		ProcessTypes: map[string]string{"web": "./start-nginx"}, Stack: cmp.Or(req.GetStack(), "bookworm"),
		Rootfs: "preloaded:" + cmp.Or(req.GetStack(), "bookworm"), User: "vcap",
		LifecycleUrl: "http://fs/v1/static/lifecycle/lifecycle.tgz", CellId: "cell-1", DurationMs: 1500,
	}
}

func (s *fakeStager) Stage(ctx context.Context, req *stagerv1.StageRequest) (grpc.ServerStreamingClient[stagerv1.StageResponse], error) {
	s.j.add("Stage %s", req.GetAppName())
	s.mu.Lock()
	s.requests = append(s.requests, proto.Clone(req).(*stagerv1.StageRequest))
	s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	events := []*stagerv1.StageResponse{
		{Event: &stagerv1.StageResponse_Started{Started: &stagerv1.StagingStarted{TaskGuid: "staging-task-1", Stack: req.GetStack(), Buildpacks: []string{"staticfile", "nodejs"}}}},
		{Event: &stagerv1.StageResponse_Log{Log: &repv1.LogLine{Source: "STG", Stream: "stdout", Text: "-----> Staticfile Buildpack"}}},
		{Event: &stagerv1.StageResponse_Log{Log: &repv1.LogLine{Stream: "stdout", Text: "       Copying the site", Index: 0}}},
		{Event: &stagerv1.StageResponse_Result{Result: stagedResult(req)}},
	}
	if s.stage != nil {
		events = s.stage(req)
	}
	return &fakeStageStream{ctx: ctx, events: events, end: cmp.Or(s.cut, io.EOF)}, nil
}

func (s *fakeStager) ListStacks(context.Context) ([]*stagerv1.Stack, error) {
	s.j.add("ListStacks")
	if s.err != nil {
		return nil, s.err
	}
	return s.stacks, nil
}

func (s *fakeStager) lastRequest() *stagerv1.StageRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

// fakeStageStream hands out events, then end.
type fakeStageStream struct {
	grpc.ClientStream // nil: only Recv is called
	ctx               context.Context
	events            []*stagerv1.StageResponse
	end               error
}

func (s *fakeStageStream) Recv() (*stagerv1.StageResponse, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	if len(s.events) == 0 {
		return nil, s.end
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}
