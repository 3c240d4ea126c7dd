package watcher

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/route-emitter/emitter"
	"drover.dev/route-emitter/routingtable"
)

// fakeBBS serves a fixed snapshot and an event log; a cursor below oldest is OUT_OF_RANGE.
type fakeBBS struct {
	mu         sync.Mutex
	desired    []*modelsv1.DesiredLRPRoutingInfo
	actuals    []*modelsv1.ActualLRP
	events     []*modelsv1.Event // sequences ascending
	oldest     uint64
	subscribes []*bbsv1.SubscribeRequest
	syncs      int
	wake       chan struct{}
	// held, when set, keeps the event streams from delivering until it is closed.
	held chan struct{}
	// admit, when set, keeps subscriptions from being admitted (their start fixed)
	// until it is closed.
	admit chan struct{}
	// admitted counts the subscriptions admitted; listedAfter records, for every
	// ListActualLRPs, how many had been admitted then.
	admitted    int
	listedAfter []int
	// listed, when set, runs after every ListActualLRPs took its snapshot (a commit
	// just after the sync's read); onAdmit after every admission (a commit just after
	// the stream's start).
	listed, onAdmit func()
}

// holdEvents keeps events from being delivered until the returned function is called.
func (f *fakeBBS) holdEvents() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	held := make(chan struct{})
	f.held = held
	return sync.OnceFunc(func() { close(held) })
}

func newFakeBBS() *fakeBBS { return &fakeBBS{wake: make(chan struct{})} }

func (f *fakeBBS) publish(e *modelsv1.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e.Sequence = uint64(len(f.events)) + 1
	f.events = append(f.events, e)
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *fakeBBS) subscribeRequests() []*bbsv1.SubscribeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*bbsv1.SubscribeRequest(nil), f.subscribes...)
}

func (f *fakeBBS) syncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// Subscribe admits a subscription as the BBS does: its start (the cursor, or the newest
// event then) is fixed at admission and named in the response headers.
func (f *fakeBBS) Subscribe(ctx context.Context, in *bbsv1.SubscribeRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.SubscribeResponse], error) {
	f.mu.Lock()
	f.subscribes = append(f.subscribes, in)
	admit := f.admit
	f.mu.Unlock()
	if admit != nil {
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-admit:
		}
	}
	f.mu.Lock()
	cursor := uint64(len(f.events))
	if in.AfterSequence != nil {
		if *in.AfterSequence < f.oldest {
			f.mu.Unlock()
			return nil, status.Error(codes.OutOfRange, "resync required")
		}
		cursor = *in.AfterSequence
	}
	f.admitted++
	onAdmit := f.onAdmit
	f.mu.Unlock()
	if onAdmit != nil {
		onAdmit()
	}
	return &eventStream{ctx: ctx, f: f, cursor: cursor, start: cursor}, nil
}

type eventStream struct {
	grpc.ClientStream
	ctx    context.Context
	f      *fakeBBS
	cursor uint64
	start  uint64
}

func (s *eventStream) Header() (metadata.MD, error) {
	return metadata.Pairs(client.AfterSequenceHeader, strconv.FormatUint(s.start, 10)), nil
}

func (s *eventStream) Recv() (*bbsv1.SubscribeResponse, error) {
	s.f.mu.Lock()
	held := s.f.held
	s.f.mu.Unlock()
	if held != nil {
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-held:
		}
	}
	for {
		s.f.mu.Lock()
		wake := s.f.wake
		if int(s.cursor) < len(s.f.events) {
			e := s.f.events[s.cursor]
			s.cursor++
			s.f.mu.Unlock()
			return &bbsv1.SubscribeResponse{Event: e}, nil
		}
		s.f.mu.Unlock()
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-wake:
		}
	}
}

func (f *fakeBBS) ListActualLRPs(context.Context, *bbsv1.ListActualLRPsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.ListActualLRPsResponse], error) {
	f.mu.Lock()
	f.syncs++
	f.listedAfter = append(f.listedAfter, f.admitted)
	resp := &bbsv1.ListActualLRPsResponse{ActualLrps: append([]*modelsv1.ActualLRP(nil), f.actuals...)}
	listed := f.listed
	f.mu.Unlock()
	if listed != nil {
		listed()
	}
	return &actualStream{resp: resp}, nil
}

// admissionsAtLists is, for every ListActualLRPs so far, how many subscriptions had
// been admitted then.
func (f *fakeBBS) admissionsAtLists() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.listedAfter...)
}

// setActuals replaces the actual LRPs the snapshot lists.
func (f *fakeBBS) setActuals(actuals ...*modelsv1.ActualLRP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actuals = actuals
}

type actualStream struct {
	grpc.ClientStream
	resp *bbsv1.ListActualLRPsResponse
}

func (s *actualStream) Recv() (*bbsv1.ListActualLRPsResponse, error) {
	if s.resp == nil {
		return nil, io.EOF
	}
	r := s.resp
	s.resp = nil
	return r, nil
}

func (f *fakeBBS) ListDesiredLRPRoutingInfos(context.Context, *bbsv1.ListDesiredLRPRoutingInfosRequest, ...grpc.CallOption) (*bbsv1.ListDesiredLRPRoutingInfosResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &bbsv1.ListDesiredLRPRoutingInfosResponse{RoutingInfos: f.desired}, nil
}

func (f *fakeBBS) ListDomains(context.Context, *bbsv1.ListDomainsRequest, ...grpc.CallOption) (*bbsv1.ListDomainsResponse, error) {
	return &bbsv1.ListDomainsResponse{Domains: []string{"cf-apps"}}, nil
}

// fakeEmitter records what the watcher emits.
type fakeEmitter struct {
	mu    sync.Mutex
	reg   []routingtable.RegistryMessage
	unreg []routingtable.RegistryMessage
	// bulk counts the registrations handed over paced (EmitBulk; also in reg).
	bulk       int
	broadcasts int
}

func (e *fakeEmitter) Emit(m routingtable.Messages) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reg = append(e.reg, m.Registrations...)
	e.unreg = append(e.unreg, m.Unregistrations...)
}
func (e *fakeEmitter) EmitBulk(regs []routingtable.RegistryMessage) {
	e.Emit(routingtable.Messages{Registrations: regs})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bulk += len(regs)
}
func (e *fakeEmitter) RequestBroadcast() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.broadcasts++
}

// paced returns the registrations handed over paced and the broadcasts requested.
func (e *fakeEmitter) paced() (bulk, broadcasts int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bulk, e.broadcasts
}
func (e *fakeEmitter) SetSource(emitter.Source) {}

func (e *fakeEmitter) counts() (int, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.reg), len(e.unreg)
}

// unregistered names every unregister emitted so far as "uri host:port", in order.
func (e *fakeEmitter) unregistered() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []string{}
	for _, m := range e.unreg {
		out = append(out, fmt.Sprintf("%s %s:%d", strings.Join(m.URIs, ","), m.Host, m.Port))
	}
	return out
}

// lastSequence is the sequence of the newest event.
func (f *fakeBBS) lastSequence() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return uint64(len(f.events))
}
