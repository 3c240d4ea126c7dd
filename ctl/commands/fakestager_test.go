package commands_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// fakeStager serves StagerService with mutual TLS: Stage sends events (or fails with
// stageErr), ListStacks answers stacks, and the buildpack calls keep an ordered
// in-memory list per stack as the real stager does. Every request is recorded.
type fakeStager struct {
	stagerv1.UnimplementedStagerServiceServer
	addr     string
	events   func(*stagerv1.StageRequest) []*stagerv1.StageResponse
	stageErr error
	stacks   []*stagerv1.Stack

	mu         sync.Mutex
	buildpacks []*stagerv1.Buildpack
	requests   []proto.Message
}

// startFakeStager serves f with the fake BBS's server certificate.
func startFakeStager(t *testing.T, pki testPKI, f *fakeStager) *fakeStager {
	t.Helper()
	serverTLS, err := pki.server.Server()
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	stagerv1.RegisterStagerServiceServer(srv, f)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	f.addr = lis.Addr().String()
	return f
}

func (f *fakeStager) record(req proto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, proto.Clone(req))
}

func (f *fakeStager) recorded() []proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeStager) Stage(req *stagerv1.StageRequest, stream grpc.ServerStreamingServer[stagerv1.StageResponse]) error {
	f.record(req)
	if f.stageErr != nil {
		return f.stageErr
	}
	for _, ev := range f.events(req) {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeStager) ListStacks(_ context.Context, req *stagerv1.ListStacksRequest) (*stagerv1.ListStacksResponse, error) {
	f.record(req)
	return &stagerv1.ListStacksResponse{Stacks: f.stacks}, nil
}

func (f *fakeStager) ListBuildpacks(_ context.Context, req *stagerv1.ListBuildpacksRequest) (*stagerv1.ListBuildpacksResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*stagerv1.Buildpack
	for _, b := range f.buildpacks {
		if req.GetStack() == "" || b.GetStack() == req.GetStack() {
			out = append(out, b)
		}
	}
	return &stagerv1.ListBuildpacksResponse{Buildpacks: out}, nil
}

func (f *fakeStager) CreateBuildpack(_ context.Context, req *stagerv1.CreateBuildpackRequest) (*stagerv1.CreateBuildpackResponse, error) {
	f.record(req)
	if len(req.GetArchive()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "archive is empty")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.find(req.GetName(), req.GetStack()) >= 0 {
		return nil, status.Errorf(codes.AlreadyExists, "buildpack %q is already registered for stack %q", req.GetName(), req.GetStack())
	}
	sum := sha256.Sum256(req.GetArchive())
	b := &stagerv1.Buildpack{Name: req.GetName(), Stack: req.GetStack(), Sha256: hex.EncodeToString(sum[:]),
		Size: int64(len(req.GetArchive())), Filename: req.GetFilename(), BlobKey: "buildpacks/" + req.GetStack() + "/" + req.GetName(),
		CreatedAt: testNow.UnixNano(), UpdatedAt: testNow.UnixNano()}
	f.buildpacks = append(f.buildpacks, b)
	f.move(len(f.buildpacks)-1, req.GetPosition())
	return &stagerv1.CreateBuildpackResponse{Buildpack: b}, nil
}

func (f *fakeStager) UpdateBuildpack(_ context.Context, req *stagerv1.UpdateBuildpackRequest) (*stagerv1.UpdateBuildpackResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.find(req.GetName(), req.GetStack())
	if i < 0 {
		return nil, status.Errorf(codes.NotFound, "buildpack %q is not registered for stack %q", req.GetName(), req.GetStack())
	}
	b := f.buildpacks[i]
	if len(req.GetArchive()) > 0 {
		sum := sha256.Sum256(req.GetArchive())
		b.Sha256, b.Size, b.Filename = hex.EncodeToString(sum[:]), int64(len(req.GetArchive())), req.GetFilename()
	}
	if req.GetPosition() > 0 {
		f.move(i, req.GetPosition())
	}
	return &stagerv1.UpdateBuildpackResponse{Buildpack: b}, nil
}

func (f *fakeStager) DeleteBuildpack(_ context.Context, req *stagerv1.DeleteBuildpackRequest) (*stagerv1.DeleteBuildpackResponse, error) {
	f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.find(req.GetName(), req.GetStack())
	if i < 0 {
		return nil, status.Errorf(codes.NotFound, "buildpack %q is not registered for stack %q", req.GetName(), req.GetStack())
	}
	f.buildpacks = slices.Delete(f.buildpacks, i, i+1)
	f.renumber()
	return &stagerv1.DeleteBuildpackResponse{}, nil
}

// find is the index of a buildpack, or -1. Callers hold mu.
func (f *fakeStager) find(name, stack string) int {
	return slices.IndexFunc(f.buildpacks, func(b *stagerv1.Buildpack) bool { return b.GetName() == name && b.GetStack() == stack })
}

// move puts the buildpack at index i at 1-based position among its stack's (0 or
// beyond the end: last). Callers hold mu.
func (f *fakeStager) move(i int, position int32) {
	b := f.buildpacks[i]
	rest := slices.Delete(slices.Clone(f.buildpacks), i, i+1)
	var same []*stagerv1.Buildpack
	var others []*stagerv1.Buildpack
	for _, o := range rest {
		if o.GetStack() == b.GetStack() {
			same = append(same, o)
		} else {
			others = append(others, o)
		}
	}
	at := len(same)
	if position > 0 && int(position) <= len(same) {
		at = int(position) - 1
	}
	same = slices.Insert(same, at, b)
	f.buildpacks = append(others, same...)
	f.renumber()
}

// renumber sets positions from the order within each stack. Callers hold mu.
func (f *fakeStager) renumber() {
	next := map[string]int32{}
	for _, b := range f.buildpacks {
		next[b.GetStack()]++
		b.Position = next[b.GetStack()]
	}
}
