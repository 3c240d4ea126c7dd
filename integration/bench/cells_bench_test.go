package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"drover.dev/bbs/client"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Sizes of the desire-to-RUNNING benchmark (issue 3): 20 single-instance runs, then one
// LRP of 50 instances on one cell.
const (
	singleRuns       = 20
	manyInstances    = 50
	cellBenchTimeout = 3 * time.Minute
	cellBenchDomain  = "bench-cells"
)

// BenchmarkDesireToRunning measures, on a real stack (BBS, auctioneer, one rep on the
// private containerd), the time from DesireLRP to the instance's RUNNING event for a
// busybox httpd instance with an HTTP health check, so the check's first passing poll is
// included. Run it with
//
//	go test -run '^$' -bench DesireToRunning -benchtime 1x -timeout 20m ./integration/bench/
func BenchmarkDesireToRunning(b *testing.B) {
	stack := devstacktest.New(b, devstacktest.Options{Cells: 1})
	bbs := devstacktest.Client(b, stack, 0)
	ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
	defer cancel()
	watch := watchRunning(ctx, b, bbs)

	for b.Loop() {
		var single []time.Duration
		for i := range singleRuns {
			guid := fmt.Sprintf("bench-single-%d-%d", time.Now().UnixNano(), i)
			start := time.Now()
			desire(ctx, b, bbs, guid, 1)
			at := watch.wait(ctx, b, guid, 1)
			single = append(single, at[0].Sub(start))
			remove(ctx, b, bbs, guid)
		}
		s := Summarize(single)
		b.ReportMetric(s.P50MS, "single-p50-ms")
		b.ReportMetric(s.P99MS, "single-p99-ms")
		fmt.Printf("desire→RUNNING, 1 instance, %d runs: p50 %.0f ms, p99 %.0f ms, min %.0f ms, max %.0f ms\n",
			s.Count, s.P50MS, s.P99MS, s.MinMS, s.MaxMS)

		guid := fmt.Sprintf("bench-many-%d", time.Now().UnixNano())
		start := time.Now()
		desire(ctx, b, bbs, guid, manyInstances)
		at := watch.wait(ctx, b, guid, manyInstances)
		var each []time.Duration
		for _, t := range at {
			each = append(each, t.Sub(start))
		}
		m := Summarize(each)
		b.ReportMetric(m.MaxMS, "all50-ms")
		b.ReportMetric(Rate(manyInstances, time.Duration(m.MaxMS*float64(time.Millisecond))), "instances/s")
		fmt.Printf("desire→RUNNING, %d instances on one cell: all RUNNING after %.0f ms (%.1f instances/s); per instance p50 %.0f ms, p99 %.0f ms\n",
			manyInstances, m.MaxMS, Rate(manyInstances, time.Duration(m.MaxMS*float64(time.Millisecond))), m.P50MS, m.P99MS)
		remove(ctx, b, bbs, guid)
	}
}

// httpdLRP is instances of busybox httpd on port 8080 with an HTTP check.
func httpdLRP(guid string, instances int32) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid:  guid,
		Domain:       cellBenchDomain,
		Instances:    instances,
		Rootfs:       "preloaded:busybox",
		MemoryMb:     32,
		DiskMb:       32,
		Ports:        []uint32{8080},
		StartTimeout: 60,
		LogGuid:      guid,
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path: "/bin/sh", User: "root",
			Args: []string{"-c", `mkdir -p /tmp/www && echo "$CF_INSTANCE_INDEX" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`},
		}}},
		CheckDefinition: &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{
			{HttpCheck: &modelsv1.HTTPCheck{Port: 8080, Path: "/"}},
		}},
	}
}

func desire(ctx context.Context, b *testing.B, bbs *client.Client, guid string, instances int32) {
	b.Helper()
	if _, err := bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: httpdLRP(guid, instances)}); err != nil {
		b.Fatalf("desire %s: %v", guid, err)
	}
}

// remove deletes guid and waits until its instances are gone, so runs do not overlap.
func remove(ctx context.Context, b *testing.B, bbs *client.Client, guid string) {
	b.Helper()
	if _, err := bbs.RemoveDesiredLRP(ctx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid}); err != nil {
		b.Fatalf("remove %s: %v", guid, err)
	}
	waitGone(ctx, b, bbs, guid)
}

// waitGone waits until guid has no actual LRP left.
func waitGone(ctx context.Context, b *testing.B, bbs *client.Client, guid string) {
	b.Helper()
	deadline := time.Now().Add(cellBenchTimeout)
	for time.Now().Before(deadline) {
		stream, err := bbs.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid})
		if err != nil {
			b.Fatalf("list %s: %v", guid, err)
		}
		n := 0
		for {
			resp, err := stream.Recv()
			if err != nil {
				break
			}
			n += len(resp.GetActualLrps())
		}
		if n == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("instances of %s still there after %s", guid, cellBenchTimeout)
}

// runningWatch records when each instance first turned RUNNING, from the event stream.
type runningWatch struct {
	mu      sync.Mutex
	changed chan struct{}
	at      map[string]map[int32]time.Time
	err     error
}

func watchRunning(ctx context.Context, b *testing.B, bbs *client.Client) *runningWatch {
	b.Helper()
	stream, err := bbs.Subscribe(ctx, &bbsv1.SubscribeRequest{})
	if err != nil {
		b.Fatalf("subscribe: %v", err)
	}
	w := &runningWatch{changed: make(chan struct{}, 1), at: map[string]map[int32]time.Time{}}
	go func() {
		for {
			resp, err := stream.Recv()
			now := time.Now()
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				w.notify()
				return
			}
			if c := resp.GetEvent().GetActualLrpInstanceChanged(); c != nil &&
				c.GetAfter().GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING {
				key := c.GetActualLrpKey()
				byIndex := w.at[key.GetProcessGuid()]
				if byIndex == nil {
					byIndex = map[int32]time.Time{}
					w.at[key.GetProcessGuid()] = byIndex
				}
				if _, seen := byIndex[key.GetIndex()]; !seen {
					byIndex[key.GetIndex()] = now
				}
			}
			w.mu.Unlock()
			w.notify()
		}
	}()
	return w
}

func (w *runningWatch) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// wait returns the RUNNING times of guid's n instances once all are RUNNING.
func (w *runningWatch) wait(ctx context.Context, b *testing.B, guid string, n int) []time.Time {
	b.Helper()
	timeout := time.After(cellBenchTimeout)
	for {
		w.mu.Lock()
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			b.Fatalf("event stream: %v", err)
		}
		if len(w.at[guid]) >= n {
			var out []time.Time
			for _, t := range w.at[guid] {
				out = append(out, t)
			}
			w.mu.Unlock()
			return out
		}
		got := len(w.at[guid])
		w.mu.Unlock()
		select {
		case <-w.changed:
		case <-timeout:
			b.Fatalf("%s: %d of %d instances RUNNING after %s", guid, got, n, cellBenchTimeout)
		case <-ctx.Done():
			b.Fatalf("%s: %v", guid, ctx.Err())
		}
	}
}
