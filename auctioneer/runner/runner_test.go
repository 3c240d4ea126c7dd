package runner

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"

	"drover.dev/auctioneer/auction"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

var fakeNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestRunner(t *testing.T, bbs BBS, reps RepFactory) (*Runner, *Batch, *Metrics) {
	t.Helper()
	metrics, err := NewMetrics(nil)
	require.NoError(t, err)
	batch := NewBatch()
	r := New(batch, bbs, reps, Options{
		CellStateTimeout:     200 * time.Millisecond,
		CommunicationTimeout: time.Second,
		BBSRetryDelay:        10 * time.Millisecond,
		Auction:              auction.Options{StartingContainerWeight: 0.25},
		Metrics:              metrics,
	})
	return r, batch, metrics
}

func TestBatchDedupeAndDrain(t *testing.T) {
	b := NewBatch()
	first := lrpStart("a", 2, 1)
	dup := lrpStart("a", 1, 99) // a.0 again, different memory
	b.AddLRPs(first)
	b.AddLRPs(dup)
	b.AddTasks([]auction.TaskAuction{taskStart("t", "preloaded:busybox"), taskStart("t", "docker:///x"), taskStart("u", "preloaded:busybox")})

	select {
	case <-b.HasWork():
	default:
		t.Fatal("HasWork not signalled")
	}
	select {
	case <-b.HasWork():
		t.Fatal("HasWork holds more than one signal")
	default:
	}

	lrps, tasks := b.DedupeAndDrain()
	require.Len(t, lrps, 2)
	require.Equal(t, 1, lrps[0].Resource.MemoryMB, "the first of a duplicate is kept")
	require.Len(t, tasks, 2)
	require.Equal(t, "preloaded:busybox", tasks[0].Constraint.RootFS)

	lrps, tasks = b.DedupeAndDrain()
	require.Empty(t, lrps)
	require.Empty(t, tasks)
}

func TestRunAuctionPlacesAndReportsFailures(t *testing.T) {
	reps := fakeReps{"cell-1": healthyRep("cell-1", "z1", 1000), "cell-2": healthyRep("cell-2", "z2", 1000)}
	bbs := newFakeBBS(presence("cell-1"), presence("cell-2"))
	r, batch, metrics := newTestRunner(t, bbs, reps)

	batch.AddLRPs(lrpStart("web", 4, 100))
	batch.AddLRPs(lrpStart("huge", 1, 4096))
	batch.AddTasks([]auction.TaskAuction{taskStart("ok-task", "preloaded:busybox"), taskStart("bad-task", "preloaded:nope")})
	r.RunAuction(context.Background())

	for _, id := range []string{"cell-1", "cell-2"} {
		performs := reps[id].performs()
		require.Len(t, performs, 1)
		require.Equal(t, id, performs[0].GetCellId())
		require.Len(t, performedLRPs(performs), 2, "web spreads 2 per cell")
	}
	failed, rejected, _ := bbs.snapshot()
	require.Equal(t, map[string]string{"huge.0": "insufficient resources: memory (needs 4096 MB, largest free 1000 MB)"}, failed)
	require.Equal(t, map[string]string{"bad-task": auction.ErrRootFSMismatch}, rejected)
	require.Equal(t, 4.0, testutil.ToFloat64(metrics.LRPAuctionsStarted))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.LRPAuctionsFailed))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.TaskAuctionsStarted))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.TaskAuctionsFailed))
	require.Equal(t, uint64(1), histogramCount(t, metrics.FetchStatesDuration))
}

func TestRunAuctionDropsUnusableCells(t *testing.T) {
	broken := healthyRep("broken", "z1", 1000)
	broken.stateErr = errors.New("connection refused")
	evacuating := healthyRep("evacuating", "z1", 1000)
	evacuating.state.Evacuating = true
	impostor := healthyRep("someone-else", "z1", 1000)
	slow := healthyRep("slow", "z1", 1000)
	slow.hang = true
	cordoned := healthyRep("cordoned", "z1", 1000)
	reps := fakeReps{"good": healthyRep("good", "z1", 1000), "broken": broken, "evacuating": evacuating, "impostor": impostor, "slow": slow, "cordoned": cordoned}
	cordonedPresence := presence("cordoned")
	cordonedPresence.Cordoned, cordonedPresence.CordonReason = true, "kernel upgrade"
	bbs := newFakeBBS(presence("broken"), cordonedPresence, presence("evacuating"), presence("good"), presence("impostor"), presence("slow"), presence("unknown"))
	r, batch, metrics := newTestRunner(t, bbs, reps)

	batch.AddLRPs(lrpStart("web", 3, 10))
	r.RunAuction(context.Background())

	require.ElementsMatch(t, []string{"web.0", "web.1", "web.2"}, performedLRPs(reps["good"].performs()))
	for _, id := range []string{"broken", "cordoned", "evacuating", "impostor", "slow"} {
		require.Empty(t, reps[id].performs(), id)
	}
	require.Zero(t, cordoned.stateCalls(), "a cordoned cell is not even asked for its state")
	require.Equal(t, 5.0, testutil.ToFloat64(metrics.FailedCellStateRequests))
}

func TestRunAuctionNamesTheCordonedCells(t *testing.T) {
	cordoned := healthyRep("cell-1", "z1", 1000)
	p := presence("cell-1")
	p.Cordoned, p.CordonReason = true, "kernel upgrade"
	p.RootfsProviders = []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: []string{"busybox"}}}
	bbs := newFakeBBS(p)
	r, batch, _ := newTestRunner(t, bbs, fakeReps{"cell-1": cordoned})

	batch.AddLRPs(lrpStart("web", 1, 10))
	batch.AddTasks([]auction.TaskAuction{taskStart("t", "preloaded:busybox")})
	r.RunAuction(context.Background())

	failed, rejected, listCalls := bbs.snapshot()
	require.Equal(t, 1, listCalls, "an all-cordoned cluster is not listed again")
	want := "all compatible cells are cordoned: cell-1 (kernel upgrade)"
	require.Equal(t, map[string]string{"web.0": want}, failed)
	require.Equal(t, map[string]string{"t": want}, rejected)
	require.Zero(t, cordoned.stateCalls(), "a cordoned cell is not asked for its state")
	require.Empty(t, cordoned.performs())
}

func TestRunAuctionWhenNoCellAnswers(t *testing.T) {
	broken := healthyRep("broken", "z1", 1000)
	broken.stateErr = errors.New("unavailable")
	bbs := newFakeBBS(presence("broken"))
	r, batch, _ := newTestRunner(t, bbs, fakeReps{"broken": broken})

	batch.AddLRPs(lrpStart("web", 1, 10))
	batch.AddTasks([]auction.TaskAuction{taskStart("t", "preloaded:busybox")})
	r.RunAuction(context.Background())

	failed, rejected, listCalls := bbs.snapshot()
	require.Equal(t, FetchAttempts, listCalls)
	require.Equal(t, map[string]string{"web.0": auction.ErrCellCommunication}, failed)
	require.Equal(t, map[string]string{"t": auction.ErrCellCommunication}, rejected)
}

func TestRunAuctionRepRefusals(t *testing.T) {
	t.Run("refused work is reported with the cell", func(t *testing.T) {
		rep := healthyRep("cell-1", "z1", 1000)
		rep.refuse = func(req *repv1.PerformRequest) *repv1.PerformResponse {
			return &repv1.PerformResponse{FailedLrps: req.GetLrps()[:1], FailedTasks: req.GetTasks()}
		}
		bbs := newFakeBBS(presence("cell-1"))
		r, batch, metrics := newTestRunner(t, bbs, fakeReps{"cell-1": rep})
		batch.AddLRPs(lrpStart("web", 1, 10))
		batch.AddLRPs(lrpStart("api", 1, 20))
		batch.AddTasks([]auction.TaskAuction{taskStart("t", "preloaded:busybox")})
		r.RunAuction(context.Background())

		failed, rejected, _ := bbs.snapshot()
		require.Equal(t, map[string]string{"api.0": RejectedByCell("cell-1")}, failed, "the biggest is sent first and refused")
		require.Equal(t, map[string]string{"t": "cell cell-1 rejected the work"}, rejected)
		require.Equal(t, 1.0, testutil.ToFloat64(metrics.LRPAuctionsStarted))
		require.Equal(t, 1.0, testutil.ToFloat64(metrics.LRPAuctionsFailed))
	})
	t.Run("a failed Perform call marks nothing failed", func(t *testing.T) {
		rep := healthyRep("cell-1", "z1", 1000)
		rep.performErr = errors.New("connection reset")
		bbs := newFakeBBS(presence("cell-1"))
		r, batch, _ := newTestRunner(t, bbs, fakeReps{"cell-1": rep})
		batch.AddLRPs(lrpStart("web", 2, 10))
		r.RunAuction(context.Background())

		require.Len(t, rep.performs(), 1)
		failed, rejected, _ := bbs.snapshot()
		require.Empty(t, failed)
		require.Empty(t, rejected)
	})
}

func TestRunAuctionRequeuesWhenTheBBSFails(t *testing.T) {
	rep := healthyRep("cell-1", "z1", 1000)
	bbs := newFakeBBS(presence("cell-1"))
	bbs.listErrs = []error{errors.New("bbs down")}
	r, batch, _ := newTestRunner(t, bbs, fakeReps{"cell-1": rep})
	batch.AddLRPs(lrpStart("web", 2, 10))
	<-batch.HasWork()

	r.RunAuction(context.Background())
	require.Empty(t, rep.performs())
	select {
	case <-batch.HasWork():
	default:
		t.Fatal("requeued work did not signal HasWork")
	}

	r.RunAuction(context.Background())
	require.ElementsMatch(t, []string{"web.0", "web.1"}, performedLRPs(rep.performs()))
}

func TestRunnerBatchesWorkArrivingDuringAnAuction(t *testing.T) {
	rep := healthyRep("cell-1", "z1", 1000)
	gate := make(chan struct{})
	rep.gate = gate
	bbs := newFakeBBS(presence("cell-1"))
	r, batch, _ := newTestRunner(t, bbs, fakeReps{"cell-1": rep})
	process := ifrit.Invoke(r)
	t.Cleanup(func() {
		process.Signal(os.Interrupt)
		<-process.Wait()
	})

	batch.AddLRPs(lrpStart("first", 1, 10))
	require.Eventually(t, func() bool { _, _, calls := bbs.snapshot(); return calls == 1 }, 5*time.Second, 5*time.Millisecond)
	// The first auction waits in State; these gather into the next batch.
	batch.AddLRPs(lrpStart("second", 1, 10))
	batch.AddLRPs(lrpStart("third", 2, 10))
	batch.AddTasks([]auction.TaskAuction{taskStart("t", "preloaded:busybox")})
	rep.mu.Lock()
	rep.gate = nil
	rep.mu.Unlock()
	close(gate)

	require.Eventually(t, func() bool { return len(rep.performs()) == 2 }, 5*time.Second, 5*time.Millisecond)
	performs := rep.performs()
	require.Equal(t, []string{"first.0"}, performedLRPs(performs[:1]))
	require.ElementsMatch(t, []string{"second.0", "third.0", "third.1"}, performedLRPs(performs[1:]))
	require.Len(t, performs[1].GetTasks(), 1)
	_, _, calls := bbs.snapshot()
	require.Equal(t, 2, calls, "one auction per batch")
}

func TestRunnerStopsWhenSignalled(t *testing.T) {
	rep := healthyRep("cell-1", "z1", 1000)
	rep.hang = true
	bbs := newFakeBBS(presence("cell-1"))
	r, batch, _ := newTestRunner(t, bbs, fakeReps{"cell-1": rep})
	r.opts.CellStateTimeout = time.Hour
	process := ifrit.Invoke(r)
	batch.AddLRPs(lrpStart("web", 1, 10))
	require.Eventually(t, func() bool { _, _, calls := bbs.snapshot(); return calls == 1 }, 5*time.Second, 5*time.Millisecond)

	process.Signal(os.Interrupt)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("runner did not stop while an auction was waiting on a cell")
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}
