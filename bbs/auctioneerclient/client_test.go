package auctioneerclient_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/auctioneerclient"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

const (
	waitFor = 10 * time.Second
	lockTTL = time.Minute
)

// fakeAuctioneer records the task guids it is sent; a standby answers UNAVAILABLE, as
// an auctioneer without the lock does.
type fakeAuctioneer struct {
	auctioneerv1.UnimplementedAuctioneerServiceServer
	address string
	mu      sync.Mutex
	standby bool
	guids   []string
	lrps    int
}

func (f *fakeAuctioneer) RequestTaskAuctions(_ context.Context, req *auctioneerv1.RequestTaskAuctionsRequest) (*auctioneerv1.RequestTaskAuctionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.standby {
		return nil, status.Error(codes.Unavailable, "not the active auctioneer")
	}
	for _, r := range req.GetRequests() {
		f.guids = append(f.guids, r.GetTaskGuid())
	}
	return &auctioneerv1.RequestTaskAuctionsResponse{}, nil
}

func (f *fakeAuctioneer) RequestLRPAuctions(_ context.Context, _ *auctioneerv1.RequestLRPAuctionsRequest) (*auctioneerv1.RequestLRPAuctionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.standby {
		return nil, status.Error(codes.Unavailable, "not the active auctioneer")
	}
	f.lrps++
	return &auctioneerv1.RequestLRPAuctionsResponse{}, nil
}

func (f *fakeAuctioneer) setStandby(standby bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.standby = standby
}

func (f *fakeAuctioneer) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.guids...)
}

func (f *fakeAuctioneer) lrpCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lrps
}

// startAuctioneer serves a fake auctioneer on a free loopback port until the test ends.
func startAuctioneer(t *testing.T) *fakeAuctioneer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeAuctioneer{address: lis.Addr().String()}
	srv := grpc.NewServer()
	auctioneerv1.RegisterAuctioneerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f
}

type env struct {
	t   *testing.T
	ctx context.Context
	db  *store.Postgres
}

func newEnv(t *testing.T) *env {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, db: storetest.NewStore(t)}
}

func (e *env) client(fallback string, refresh time.Duration) *auctioneerclient.Client {
	c := auctioneerclient.New(e.db, auctioneerclient.Options{
		Fallback:        fallback,
		RefreshInterval: refresh,
		DialOptions:     []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())},
	})
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// hand moves the auctioneer lock from one holder to another (from "" means it is free).
func (e *env) hand(from, to, value string) {
	e.t.Helper()
	if from != "" {
		require.NoError(e.t, e.db.ReleaseLock(e.ctx, auctioneerclient.LockKey, from))
	}
	_, err := e.db.AcquireLock(e.ctx, auctioneerclient.LockKey, to, value, lockTTL)
	require.NoError(e.t, err)
}

func (e *env) sendTask(c *auctioneerclient.Client, guid string) error {
	_, err := c.RequestTaskAuctions(e.ctx, &auctioneerv1.RequestTaskAuctionsRequest{
		Requests: []*modelsv1.TaskStartRequest{{TaskGuid: guid}},
	})
	return err
}

// A failed call makes the client read the lock again: every request reaches the
// auctioneer that holds the lock at the time, even with a refresh interval that never
// passes during the test.
func TestRequestsFollowTheLockHolderAfterAFailedCall(t *testing.T) {
	e := newEnv(t)
	a, b := startAuctioneer(t), startAuctioneer(t)
	c := e.client(a.address, time.Hour)

	// No lock: the fallback.
	require.NoError(t, e.sendTask(c, "free-1"))

	// b takes the lock, a becomes a standby.
	e.hand("", "b", b.address)
	a.setStandby(true)
	require.NoError(t, e.sendTask(c, "held-by-b-1"))
	require.NoError(t, e.sendTask(c, "held-by-b-2"))

	// a takes it back, b becomes a standby.
	b.setStandby(true)
	a.setStandby(false)
	e.hand("b", "a", a.address)
	_, err := c.RequestLRPAuctions(e.ctx, &auctioneerv1.RequestLRPAuctionsRequest{})
	require.NoError(t, err)
	require.NoError(t, e.sendTask(c, "held-by-a-1"))

	require.Equal(t, []string{"free-1", "held-by-a-1"}, a.received())
	require.Equal(t, []string{"held-by-b-1", "held-by-b-2"}, b.received())
	require.Equal(t, 1, a.lrpCalls())
	require.Equal(t, 0, b.lrpCalls())
}

// Without failures the lock is read again once the refresh interval has passed.
func TestRequestsFollowTheLockHolderAfterTheRefreshInterval(t *testing.T) {
	e := newEnv(t)
	a, b := startAuctioneer(t), startAuctioneer(t)
	c := e.client(a.address, 20*time.Millisecond)

	e.hand("", "a", a.address)
	require.NoError(t, e.sendTask(c, "to-a"))
	e.hand("a", "b", b.address)
	deadline := time.Now().Add(waitFor)
	for len(b.received()) == 0 {
		require.True(t, time.Now().Before(deadline), "requests never reached the new lock holder")
		require.NoError(t, e.sendTask(c, "after-handover"))
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, "to-a", a.received()[0])
}

// A lock whose value is not a dialable host:port sends requests to the fallback.
func TestUndialableLockValueUsesTheFallback(t *testing.T) {
	e := newEnv(t)
	fallback := startAuctioneer(t)
	c := e.client(fallback.address, time.Millisecond)
	e.hand("", "a", "0.0.0.0:9016")
	require.NoError(t, e.sendTask(c, "to-fallback"))
	require.Equal(t, []string{"to-fallback"}, fallback.received())
}

// Without a lock holder and without a fallback there is no auctioneer to call.
func TestNoLockAndNoFallbackIsUnavailable(t *testing.T) {
	e := newEnv(t)
	c := e.client("", time.Hour)
	require.Equal(t, codes.Unavailable, status.Code(e.sendTask(c, "nowhere")))
}

func TestDialable(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{"10.0.0.10:9016", true},
		{"auctioneer.internal:9016", true},
		{"[fd00::1]:9016", true},
		{"", false},                // empty
		{"10.0.0.10", false},       // no port
		{":9016", false},           // no host
		{"0.0.0.0:9016", false},    // unspecified IPv4
		{"[::]:9016", false},       // unspecified IPv6
		{"10.0.0.10:0", false},     // port 0
		{"10.0.0.10:65536", false}, // port too large
		{"10.0.0.10:grpc", false},  // port not a number
		{"a:b:9016", false},        // not host:port
	} {
		require.Equal(t, tc.want, auctioneerclient.Dialable(tc.value), "Dialable(%q)", tc.value)
	}
}
