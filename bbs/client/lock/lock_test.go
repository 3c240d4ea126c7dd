package lock

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
)

// fakeLocks is a one-lock BBS: the holder keeps it until released or expired.
type fakeLocks struct {
	mu       sync.Mutex
	holder   string
	expires  time.Time
	down     bool // every call fails as unreachable
	attempts map[string]int
}

func newFakeLocks() *fakeLocks { return &fakeLocks{attempts: map[string]int{}} }

func (f *fakeLocks) AcquireLock(_ context.Context, _, owner, _ string, ttl time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[owner]++
	if f.down {
		return status.Error(codes.Unavailable, "bbs unreachable")
	}
	if f.holder != "" && f.holder != owner && time.Now().Before(f.expires) {
		return models.ErrLockCollision
	}
	f.holder, f.expires = owner, time.Now().Add(ttl)
	return nil
}

func (f *fakeLocks) ReleaseLock(_ context.Context, _, owner string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder == owner {
		f.holder = ""
	}
	return nil
}

func (f *fakeLocks) set(holder string, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holder, f.expires = holder, time.Now().Add(ttl)
}

func (f *fakeLocks) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeLocks) state(owner string) (holder string, attempts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holder, f.attempts[owner]
}

func start(t *testing.T, locks *fakeLocks, ttl time.Duration) ifrit.Process {
	t.Helper()
	r := New(locks, Options{Key: "auctioneer", Owner: "me", Value: "127.0.0.1:9016", TTL: ttl, RetryInterval: 10 * time.Millisecond})
	process := ifrit.Background(r)
	t.Cleanup(func() {
		process.Signal(os.Interrupt)
		<-process.Wait()
	})
	return process
}

func requireReady(t *testing.T, p ifrit.Process) {
	t.Helper()
	select {
	case <-p.Ready():
	case err := <-p.Wait():
		t.Fatalf("exited before holding the lock: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("lock not acquired")
	}
}

func requireExit(t *testing.T, p ifrit.Process) error {
	t.Helper()
	select {
	case err := <-p.Wait():
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("lock runner still running")
		return nil
	}
}

func TestLockAcquiresAFreeLock(t *testing.T) {
	locks := newFakeLocks()
	p := start(t, locks, time.Second)
	requireReady(t, p)
	holder, _ := locks.state("me")
	require.Equal(t, "me", holder)
	// It keeps renewing.
	_, before := locks.state("me")
	require.Eventually(t, func() bool { _, n := locks.state("me"); return n >= before+3 }, 5*time.Second, 5*time.Millisecond)
}

func TestLockWaitsWhileAnotherHoldsIt(t *testing.T) {
	locks := newFakeLocks()
	locks.set("other", time.Hour)
	p := start(t, locks, time.Second)
	require.Eventually(t, func() bool { _, n := locks.state("me"); return n >= 3 }, 5*time.Second, 5*time.Millisecond)
	select {
	case <-p.Ready():
		t.Fatal("ready without the lock")
	default:
	}
	require.NoError(t, locks.ReleaseLock(context.Background(), "auctioneer", "other"))
	requireReady(t, p)
}

func TestLockLostToAnotherOwner(t *testing.T) {
	locks := newFakeLocks()
	p := start(t, locks, time.Second)
	requireReady(t, p)
	locks.set("other", time.Hour)
	err := requireExit(t, p)
	require.ErrorIs(t, err, ErrLost)
	require.Contains(t, err.Error(), "held by another owner")
}

func TestLockLostWhenNotRenewedWithinTTL(t *testing.T) {
	locks := newFakeLocks()
	const ttl = 200 * time.Millisecond
	p := start(t, locks, ttl)
	requireReady(t, p)
	locks.setDown(true)
	downSince := time.Now()
	err := requireExit(t, p)
	require.ErrorIs(t, err, ErrLost)
	require.GreaterOrEqual(t, time.Since(downSince), ttl, "transient failures within the TTL are tolerated")
}

func TestLockReleasedOnSignal(t *testing.T) {
	locks := newFakeLocks()
	r := New(locks, Options{Key: "auctioneer", Owner: "me", TTL: time.Second, RetryInterval: 10 * time.Millisecond})
	p := ifrit.Background(r)
	requireReady(t, p)
	p.Signal(os.Interrupt)
	require.NoError(t, requireExit(t, p))
	holder, _ := locks.state("me")
	require.Empty(t, holder)
}

func TestLockSignalledBeforeAcquiring(t *testing.T) {
	locks := newFakeLocks()
	locks.set("other", time.Hour)
	r := New(locks, Options{Key: "auctioneer", Owner: "me", TTL: time.Second, RetryInterval: 10 * time.Millisecond})
	p := ifrit.Background(r)
	require.Eventually(t, func() bool { _, n := locks.state("me"); return n >= 1 }, 5*time.Second, 5*time.Millisecond)
	p.Signal(os.Interrupt)
	require.NoError(t, requireExit(t, p))
	holder, _ := locks.state("other")
	require.Equal(t, "other", holder)
}

func TestOwnerID(t *testing.T) {
	require.Equal(t, "me", OwnerID("me", "converger"))
	a, b := OwnerID("", "converger"), OwnerID("", "converger")
	require.Regexp(t, `^converger-[0-9a-f]{16}$`, a)
	require.NotEqual(t, a, b)
}
