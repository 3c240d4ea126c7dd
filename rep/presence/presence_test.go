package presence

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
	"google.golang.org/grpc"

	"drover.dev/executor"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/internal/fakeexec"
)

// fakeCells records heartbeats; the first failures heartbeats fail.
type fakeCells struct {
	bbsv1.CellServiceClient
	mu       sync.Mutex
	beats    []*bbsv1.HeartbeatCellRequest
	failures int
	removed  []string
}

func (f *fakeCells) RemoveCell(_ context.Context, req *bbsv1.RemoveCellRequest, _ ...grpc.CallOption) (*bbsv1.RemoveCellResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, req.GetCellId())
	return &bbsv1.RemoveCellResponse{}, nil
}

func (f *fakeCells) HeartbeatCell(_ context.Context, req *bbsv1.HeartbeatCellRequest, _ ...grpc.CallOption) (*bbsv1.HeartbeatCellResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, req)
	if f.failures > 0 {
		f.failures--
		return nil, errors.New("bbs down")
	}
	return &bbsv1.HeartbeatCellResponse{}, nil
}

func (f *fakeCells) count() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.beats) }

func testConfig() Config {
	return Config{CellID: "cell-1", RepAddress: "10.0.0.5:1800", Zone: "z2", PlacementTags: []string{"gpu"},
		OptionalPlacementTags: []string{"ssd"}, TTL: 1500 * time.Millisecond, Interval: 20 * time.Millisecond}
}

func TestHeartbeatContent(t *testing.T) {
	exec := fakeexec.New(executor.Resources{MemoryMB: 4096, DiskMB: 8192, Containers: 100},
		&modelsv1.RootFSProvider{Name: "preloaded", Properties: []string{"busybox"}}, &modelsv1.RootFSProvider{Name: "docker"})
	cells := &fakeCells{}
	r, err := New(testConfig(), exec, cells, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	require.NoError(t, r.Heartbeat(context.Background()))

	req := cells.beats[0]
	require.Equal(t, uint32(2), req.GetTtlSeconds(), "TTL rounds up to whole seconds")
	p := req.GetCellPresence()
	require.Equal(t, "cell-1", p.GetCellId())
	require.Equal(t, "10.0.0.5:1800", p.GetRepAddress())
	require.Equal(t, "z2", p.GetZone())
	require.Equal(t, int32(4096), p.GetCapacity().GetMemoryMb())
	require.Equal(t, int32(8192), p.GetCapacity().GetDiskMb())
	require.Equal(t, int32(100), p.GetCapacity().GetContainers())
	require.Len(t, p.GetRootfsProviders(), 2)
	require.Equal(t, []string{"busybox"}, p.GetRootfsProviders()[0].GetProperties())
	require.Equal(t, []string{"gpu"}, p.GetPlacementTags())
	require.Equal(t, []string{"ssd"}, p.GetOptionalPlacementTags())
}

func TestRunHeartbeatsEveryIntervalAndRetriesFailures(t *testing.T) {
	exec := fakeexec.New(executor.Resources{MemoryMB: 1, DiskMB: 1, Containers: 1})
	cells := &fakeCells{failures: 2}
	r, err := New(testConfig(), exec, cells, nil, nil)
	require.NoError(t, err)
	process := ifrit.Invoke(r)
	require.Eventually(t, func() bool { return cells.count() >= 5 }, 5*time.Second, 10*time.Millisecond)
	process.Signal(syscall.SIGTERM)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("presence did not stop")
	}
	stopped := cells.count()
	require.Never(t, func() bool { return cells.count() > stopped }, 100*time.Millisecond, 10*time.Millisecond, "no heartbeat after stop")
}

func TestRemoveDeletesThePresenceAndStopsTheHeartbeats(t *testing.T) {
	exec := fakeexec.New(executor.Resources{MemoryMB: 1, DiskMB: 1, Containers: 1})
	cells := &fakeCells{}
	r, err := New(testConfig(), exec, cells, nil, nil)
	require.NoError(t, err)
	process := ifrit.Invoke(r)
	t.Cleanup(func() {
		process.Signal(syscall.SIGTERM)
		<-process.Wait()
	})
	require.Eventually(t, func() bool { return cells.count() >= 2 }, 5*time.Second, 10*time.Millisecond)

	require.NoError(t, r.Remove(context.Background()))
	cells.mu.Lock()
	require.Equal(t, []string{"cell-1"}, cells.removed)
	cells.mu.Unlock()
	removedAt := cells.count()
	require.Never(t, func() bool { return cells.count() > removedAt }, 150*time.Millisecond, 10*time.Millisecond, "no heartbeat after the removal")
	require.ErrorIs(t, r.Heartbeat(context.Background()), ErrRemoved)
}
