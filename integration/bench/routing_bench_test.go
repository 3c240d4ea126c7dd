package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"drover.dev/bbs/client"
	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/natsuser"
	"drover.dev/devstack/router"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	reconfig "drover.dev/route-emitter/config"
)

// Shape of the routing benchmark (issue 5, acceptance 5): 25,000 LRPs × 2 instances
// RUNNING on simulated cells (rows made RUNNING through the BBS API), then a steady
// stream of starts. ROUTING_BENCH_LRPS overrides the LRP count for quick runs.
const (
	routingLRPs          = 25_000
	routingInstances     = 2
	routingDomain        = "bench-routing"
	routingCells         = 20
	routingWorkers       = 16
	routingInterval      = 20 * time.Second // CF's register interval
	streamRate           = 50               // starts per second
	streamDuration       = 20 * time.Second
	routingSyncInterval  = 15 * time.Second // below streamDuration: a sync during the stream
	routingLatencyGoalMs = 100
)

// BenchmarkRoutingRegistration measures the route-emitter (the real binary, global
// mode, against a real BBS and an embedded NATS): how long a freshly started emitter
// takes until every one of 50,000 routes was registered (goal: within one register
// interval), the most messages it sent in any 1 s window (the burst cap), and the
// RUNNING-to-registered latency (receive time − the return of StartActualLRP) of a
// steady 50 starts/s for 20 s, during which the emitter also runs a full sync and a
// re-registration of every route (goal: p99 < 100 ms). Run it with
//
//	go test -run '^$' -bench RoutingRegistration -benchtime 1x -timeout 20m ./integration/bench/
func BenchmarkRoutingRegistration(b *testing.B) {
	lrps := routingLRPs
	if v, err := strconv.Atoi(os.Getenv("ROUTING_BENCH_LRPS")); err == nil && v > 0 {
		lrps = v
	}
	streamLRPs := streamRate * int(streamDuration/time.Second) / routingInstances
	stack := devstacktest.New(b, devstacktest.Options{Routing: &devstacktest.RoutingOptions{
		ConfigureRouter: func(c *router.Config) { c.RegisterInterval = libconfig.Duration(routingInterval) },
		ConfigureRouteEmitter: func(c *reconfig.Config) {
			c.LogLevel = "info"
			c.RegisterInterval = libconfig.Duration(routingInterval)
			// A full sync (and, at the register interval, a re-registration) falls inside
			// the stream: the latency includes the emitter's periodic bulk work.
			c.SyncInterval = libconfig.Duration(routingSyncInterval)
		},
	}})
	bbs := devstacktest.Client(b, stack, 0)
	ctx, cancel := context.WithTimeout(b.Context(), 18*time.Minute)
	defer cancel()

	seedStart := time.Now()
	seedRouting(ctx, b, bbs, lrps+streamLRPs)
	keys := routingKeys(lrps, 0)
	if err := startInstances(ctx, bbs, keys, 0, nil); err != nil {
		b.Fatal(err)
	}
	routes := len(keys)
	b.Logf("seeded %d LRPs × %d instances RUNNING in %s", lrps, routingInstances, time.Since(seedStart).Round(time.Millisecond))

	for b.Loop() {
		// A fresh emitter (no state file) registers every route.
		if err := stack.RouteEmitter.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		os.Remove(stack.RouteEmitter.Config.StateFile)
		rec := newRegisterRecorder(b, stack.NATS)
		start := time.Now()
		if err := stack.RouteEmitter.Start(ctx); err != nil {
			b.Fatal(err)
		}
		all := rec.waitDistinct(ctx, b, routes, 2*routingInterval+time.Minute)
		b.ReportMetric(all.Sub(start).Seconds(), "s-all-registered")
		b.ReportMetric(float64(rec.maxPerSecond()), "max-msgs/s")
		fmt.Printf("%s: %d routes registered %.2f s after the emitter started (register interval %s), at most %d messages in any 1 s\n",
			b.Name(), routes, all.Sub(start).Seconds(), routingInterval, rec.maxPerSecond())
		rec.close()
	}

	// Steady stream: 50 starts/s for 20 s, latency from each StartActualLRP's return to
	// its register.
	rec := newRegisterRecorder(b, stack.NATS)
	defer rec.close()
	streamKeys := routingKeys(streamLRPs, lrps)
	started := make([]time.Time, len(streamKeys))
	if err := startInstances(ctx, bbs, streamKeys, lrps*routingInstances, func(i int, at time.Time) { started[i] = at }); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	deadline := time.Now().Add(time.Minute)
	for i := range streamKeys {
		at, ok := rec.firstSeen(instanceAddress(lrps*routingInstances + i))
		for ; !ok; at, ok = rec.firstSeen(instanceAddress(lrps*routingInstances + i)) {
			if time.Now().After(deadline) {
				b.Fatalf("stream instance %d was not registered within a minute", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
		lat = append(lat, at.Sub(started[i]))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := Percentile(lat, 50), Percentile(lat, 99)
	b.ReportMetric(Millis(p50), "p50-ms")
	b.ReportMetric(Millis(p99), "p99-ms")
	b.ReportMetric(Millis(lat[len(lat)-1]), "max-ms")
	fmt.Printf("%s: RUNNING-to-registered over %d starts at %d/s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (goal p99 < %d ms)\n",
		b.Name(), len(lat), streamRate, Millis(p50), Millis(p99), Millis(lat[len(lat)-1]), routingLatencyGoalMs)
}

// seedRouting makes the domain fresh, the simulated cells present and n routed LRPs of
// routingInstances instances (UNCLAIMED: no auctioneer runs).
func seedRouting(ctx context.Context, b *testing.B, bbs *client.Client, n int) {
	b.Helper()
	if _, err := bbs.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: routingDomain, TtlSeconds: 3600}); err != nil {
		b.Fatalf("upsert domain: %v", err)
	}
	for i := range routingCells {
		presence := &modelsv1.CellPresence{CellId: routingCell(i), RepAddress: "127.0.0.1:1", Zone: "z1",
			Capacity: &modelsv1.CellCapacity{MemoryMb: 1 << 20, DiskMb: 1 << 20, Containers: 100_000}}
		if _, err := bbs.HeartbeatCell(ctx, &bbsv1.HeartbeatCellRequest{CellPresence: presence, TtlSeconds: 3600}); err != nil {
			b.Fatalf("heartbeat cell: %v", err)
		}
	}
	_, err := RunConcurrent(ctx, n, routingWorkers, func(ctx context.Context, _, i int) error {
		lrp := NewDesiredLRP(ProcessGuid(routingDomain, i), routingDomain, routingInstances)
		if _, err := bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
			return fmt.Errorf("desire %s: %w", lrp.GetProcessGuid(), err)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func routingCell(i int) string { return fmt.Sprintf("bench-routing-cell-%02d", i%routingCells) }

// routingKeys are the instance keys of n LRPs from the first-th, LRP by LRP.
func routingKeys(n, first int) []*modelsv1.ActualLRPKey {
	keys := make([]*modelsv1.ActualLRPKey, 0, n*routingInstances)
	for i := first; i < first+n; i++ {
		for index := range int32(routingInstances) {
			keys = append(keys, &modelsv1.ActualLRPKey{ProcessGuid: ProcessGuid(routingDomain, i), Index: index, Domain: routingDomain})
		}
	}
	return keys
}

// instanceAddress is the unique address of the i-th simulated instance.
func instanceAddress(i int) string {
	return net.JoinHostPort(fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255), "61000")
}

// startInstances claims and starts every key, the i-th at instanceAddress(offset+i).
// With paced (a stream) it starts streamRate per second one at a time and reports
// when each StartActualLRP returned; otherwise routingWorkers at a time, flat out.
func startInstances(ctx context.Context, bbs *client.Client, keys []*modelsv1.ActualLRPKey, offset int, paced func(i int, at time.Time)) error {
	start := func(ctx context.Context, i int) error {
		key := keys[i]
		n := offset + i
		ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: uuid.NewString(), CellId: routingCell(n)}
		if _, err := bbs.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: key.GetProcessGuid(), Index: key.GetIndex(), ActualLrpInstanceKey: ik}); err != nil {
			return fmt.Errorf("claim %s/%d: %w", key.GetProcessGuid(), key.GetIndex(), err)
		}
		host, _, _ := net.SplitHostPort(instanceAddress(n))
		info := &modelsv1.ActualLRPNetInfo{Address: host, Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61000}},
			PreferredAddress: modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST}
		if _, err := bbs.StartActualLRP(ctx, &bbsv1.StartActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ActualLrpNetInfo: info}); err != nil {
			return fmt.Errorf("start %s/%d: %w", key.GetProcessGuid(), key.GetIndex(), err)
		}
		if paced != nil {
			paced(i, time.Now())
		}
		return nil
	}
	if paced == nil {
		_, err := RunConcurrent(ctx, len(keys), routingWorkers, func(ctx context.Context, _, i int) error { return start(ctx, i) })
		return err
	}
	ticker := time.NewTicker(time.Second / streamRate)
	defer ticker.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for i := range keys {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
		wg.Go(func() {
			if err := start(ctx, i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// registerRecorder counts router.register messages on NATS: when each address was
// first seen, and every receive time (for the burst measure).
type registerRecorder struct {
	nc *nats.Conn

	mu       sync.Mutex
	first    map[string]time.Time
	received []time.Time
}

// newRegisterRecorder connects to the stack's NATS as a router (natsuser.Router).
func newRegisterRecorder(b *testing.B, n *devstack.NATS) *registerRecorder {
	b.Helper()
	nc, err := n.Connect(natsuser.Router)
	if err != nil {
		b.Fatal(err)
	}
	r := &registerRecorder{nc: nc, first: map[string]time.Time{}}
	sub, err := nc.Subscribe(router.SubjectRegister, func(m *nats.Msg) {
		now := time.Now()
		var msg router.RegistryMessage
		if json.Unmarshal(m.Data, &msg) != nil {
			return
		}
		addr := net.JoinHostPort(msg.Host, strconv.Itoa(int(msg.Port)))
		r.mu.Lock()
		defer r.mu.Unlock()
		r.received = append(r.received, now)
		if _, ok := r.first[addr]; !ok {
			r.first[addr] = now
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		b.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return r
}

func (r *registerRecorder) close() { r.nc.Close() }

func (r *registerRecorder) firstSeen(addr string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.first[addr]
	return t, ok
}

// waitDistinct waits until n distinct addresses were registered and returns when the
// last of them first arrived.
func (r *registerRecorder) waitDistinct(ctx context.Context, b *testing.B, n int, wait time.Duration) time.Time {
	b.Helper()
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		have := len(r.first)
		var last time.Time
		if have >= n {
			for _, t := range r.first {
				if t.After(last) {
					last = t
				}
			}
		}
		r.mu.Unlock()
		if have >= n {
			return last
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Fatalf("%d of %d routes registered within %s", have, n, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// maxPerSecond is the most messages received within any 1 s window.
func (r *registerRecorder) maxPerSecond() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	best, lo := 0, 0
	for hi, t := range r.received {
		for t.Sub(r.received[lo]) >= time.Second {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}
