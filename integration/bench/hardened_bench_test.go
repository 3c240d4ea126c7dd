package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"drover.dev/bbs/client"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// Shape of the hardened desire-to-RUNNING benchmark (issue 16): cell-1 runs containers
// as today but for the user namespace (none), cell-2 in its user namespace with 20
// egress rules per container.
const (
	plainTag            = "plain"
	hardenedTag         = "hardened"
	hardenedEgressRules = 20
	// egressSetupMetric is the rep's histogram of per-container firewall setup time.
	egressSetupMetric = "drover_rep_egress_rule_setup_seconds"
)

// BenchmarkDesireToRunningHardened compares desire→RUNNING of a busybox httpd instance
// on a plain cell (no user namespace, no egress rules of its own) with a hardened one
// (user namespace, 20 egress rules), alternating the two so that both see the same
// machine load; then it desires 50 hardened single-instance LRPs at once and reads the
// hardened rep's firewall setup histogram. Run it with
//
//	go test -run '^$' -bench DesireToRunningHardened -benchtime 1x -timeout 20m ./integration/bench/
func BenchmarkDesireToRunningHardened(b *testing.B) {
	stack := devstacktest.New(b, devstacktest.Options{Cells: 2, ConfigureRep: configureHardenedCells})
	if stack.Reps[0].Config.Executor.UserNamespace != nil || stack.Reps[1].Config.Executor.UserNamespace == nil {
		b.Fatalf("cell-1 must run without and cell-2 with a user namespace; got %v and %v",
			stack.Reps[0].Config.Executor.UserNamespace, stack.Reps[1].Config.Executor.UserNamespace)
	}
	hardenedMetrics := "http://" + stack.Reps[1].Config.DebugAddress + "/metrics"
	bbs := devstacktest.Client(b, stack, 0)
	ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
	defer cancel()
	watch := watchRunning(ctx, b, bbs)

	for b.Loop() {
		// One untimed run on each cell first: it makes cell-2's remapped snapshot of the
		// busybox image, a once-per-image cost.
		for _, hardened := range []bool{false, true} {
			guid := fmt.Sprintf("bench-warm-%t-%d", hardened, time.Now().UnixNano())
			start := time.Now()
			desireHardened(ctx, b, bbs, guid, hardened)
			at := watch.wait(ctx, b, guid, 1)
			fmt.Printf("warm-up (not counted), hardened=%t: %.0f ms\n", hardened, millis(at[0].Sub(start)))
			remove(ctx, b, bbs, guid)
		}

		singlesBefore := readHistogram(ctx, b, hardenedMetrics)
		var plain, hardened []time.Duration
		for i := range singleRuns {
			isHardened := i%2 == 1
			guid := fmt.Sprintf("bench-hardened-%t-%d-%d", isHardened, time.Now().UnixNano(), i)
			start := time.Now()
			desireHardened(ctx, b, bbs, guid, isHardened)
			at := watch.wait(ctx, b, guid, 1)
			if isHardened {
				hardened = append(hardened, at[0].Sub(start))
			} else {
				plain = append(plain, at[0].Sub(start))
			}
			remove(ctx, b, bbs, guid)
		}
		p, h := Summarize(plain), Summarize(hardened)
		b.ReportMetric(p.P50MS, "plain-p50-ms")
		b.ReportMetric(p.P99MS, "plain-p99-ms")
		b.ReportMetric(h.P50MS, "hardened-p50-ms")
		b.ReportMetric(h.P99MS, "hardened-p99-ms")
		b.ReportMetric(h.P50MS-p.P50MS, "hardened-minus-plain-p50-ms")
		b.ReportMetric(h.P99MS-p.P99MS, "hardened-minus-plain-p99-ms")
		fmt.Printf("desire→RUNNING, plain (no user namespace, no egress rules), %d runs: p50 %.0f ms, p99 %.0f ms, min %.0f ms, max %.0f ms\n",
			p.Count, p.P50MS, p.P99MS, p.MinMS, p.MaxMS)
		fmt.Printf("desire→RUNNING, hardened (user namespace, %d egress rules), %d runs: p50 %.0f ms, p99 %.0f ms, min %.0f ms, max %.0f ms\n",
			hardenedEgressRules, h.Count, h.P50MS, h.P99MS, h.MinMS, h.MaxMS)
		fmt.Printf("hardened − plain: p50 %+.0f ms, p99 %+.0f ms (p50 ratio %.2f; goal p50 ≤ +100 ms)\n",
			h.P50MS-p.P50MS, h.P99MS-p.P99MS, Ratio(h.P50MS, p.P50MS))

		before := readHistogram(ctx, b, hardenedMetrics)
		printFirewallSetup("the hardened single runs, one at a time", before.Sub(singlesBefore))
		var guids []string
		for i := range manyInstances {
			guids = append(guids, fmt.Sprintf("bench-hardened-many-%d-%d", time.Now().UnixNano(), i))
		}
		start := time.Now()
		for _, guid := range guids {
			desireHardened(ctx, b, bbs, guid, true)
		}
		desired := time.Since(start)
		var each []time.Duration
		for _, guid := range guids {
			each = append(each, watch.wait(ctx, b, guid, 1)[0].Sub(start))
		}
		m := Summarize(each)
		all := time.Duration(m.MaxMS * float64(time.Millisecond))
		b.ReportMetric(m.MaxMS, "hardened-all50-ms")
		b.ReportMetric(Rate(manyInstances, all), "hardened-instances/s")
		fmt.Printf("desire→RUNNING, %d hardened single-instance LRPs (%d egress rules each) desired at once on one cell (desires took %.0f ms): all RUNNING after %.0f ms (%.1f instances/s); per LRP p50 %.0f ms, p99 %.0f ms\n",
			manyInstances, hardenedEgressRules, millis(desired), m.MaxMS, Rate(manyInstances, all), m.P50MS, m.P99MS)

		crashes, reasons, cells := crashesAndCells(ctx, b, bbs, guids)
		fmt.Printf("the %d LRPs: %d crashes %v, instances on cells %v\n", manyInstances, crashes, reasons, cells)

		fw := readHistogram(ctx, b, hardenedMetrics).Sub(before)
		if fw.Count < manyInstances {
			b.Fatalf("%s counted %.0f firewall setups for %d new containers", egressSetupMetric, fw.Count, manyInstances)
		}
		b.ReportMetric(fw.Quantile(0.5)*1000, "fw-setup-p50-ms")
		b.ReportMetric(fw.Sum/fw.Count*1000, "fw-setup-mean-ms")
		printFirewallSetup(fmt.Sprintf("the %d desired at once", manyInstances), fw)

		for _, guid := range guids {
			if _, err := bbs.RemoveDesiredLRP(ctx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid}); err != nil {
				b.Fatalf("remove %s: %v", guid, err)
			}
		}
		for _, guid := range guids {
			waitGone(ctx, b, bbs, guid)
		}
	}
}

// configureHardenedCells makes cell 1 the plain cell (no user namespace) and cell 2 the
// hardened one (the dev stack's user namespace) with room for the 50 instances.
func configureHardenedCells(i int, c *repconfig.Config) {
	switch i {
	case 1:
		c.Executor.UserNamespace = nil
		c.PlacementTags = []string{plainTag}
	case 2:
		c.PlacementTags = []string{hardenedTag}
		c.MemoryMB = max(c.MemoryMB, 2*manyInstances*32)
		c.DiskMB = max(c.DiskMB, 2*manyInstances*32)
		c.Containers = max(c.Containers, 2*manyInstances)
	}
}

// desireHardened desires one busybox httpd instance on the hardened cell with 20 egress
// rules, or on the plain cell without rules of its own.
func desireHardened(ctx context.Context, b *testing.B, bbs *client.Client, guid string, hardened bool) {
	b.Helper()
	lrp := httpdLRP(guid, 1)
	lrp.PlacementTags = []string{plainTag}
	if hardened {
		lrp.PlacementTags = []string{hardenedTag}
		lrp.EgressRules = benchEgressRules(hardenedEgressRules)
	}
	if _, err := bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
		b.Fatalf("desire %s: %v", guid, err)
	}
}

// benchEgressRules are n valid egress rules, a mix of tcp (ports, a range, logged), udp
// and icmp to 10.255.k.0/24 destinations. They only become firewall rules: nothing
// sends traffic to them.
func benchEgressRules(n int) []*modelsv1.EgressRule {
	icmpType, icmpCode := int32(8), int32(0)
	var rules []*modelsv1.EgressRule
	for k := range n {
		net := fmt.Sprintf("10.255.%d.", k)
		switch k % 4 {
		case 0:
			rules = append(rules, &modelsv1.EgressRule{Protocol: "tcp", Destinations: []string{net + "1"}, Ports: []uint32{80, 443}})
		case 1:
			rules = append(rules, &modelsv1.EgressRule{Protocol: "udp", Destinations: []string{net + "0/28"},
				PortRange: &modelsv1.PortRange{Start: 1000, End: 2000}})
		case 2:
			rules = append(rules, &modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{net + "10-" + net + "20"},
				IcmpInfo: &modelsv1.ICMPInfo{Type: &icmpType, Code: &icmpCode}})
		default:
			rules = append(rules, &modelsv1.EgressRule{Protocol: "tcp", Destinations: []string{net + "0/24"},
				PortRange: &modelsv1.PortRange{Start: 8000, End: 8100}, Log: true})
		}
	}
	return rules
}

// printFirewallSetup prints a reading of the rep's firewall setup histogram; its
// quantiles are estimates within the histogram's buckets.
func printFirewallSetup(what string, fw Histogram) {
	mean := 0.0
	if fw.Count > 0 {
		mean = fw.Sum / fw.Count * 1000
	}
	fmt.Printf("cell-2 %s, %s: count %.0f, p50 %.2f ms, p99 %.2f ms (bucket estimates), mean %.2f ms, total %.0f ms\n",
		egressSetupMetric, what, fw.Count, fw.Quantile(0.5)*1000, fw.Quantile(0.99)*1000, mean, fw.Sum*1000)
}

// crashesAndCells sums the crash counts of guids' instances, counts their last crash
// reasons and counts the instances by cell.
func crashesAndCells(ctx context.Context, b *testing.B, bbs *client.Client, guids []string) (int32, map[string]int, map[string]int) {
	b.Helper()
	var crashes int32
	reasons, cells := map[string]int{}, map[string]int{}
	for _, guid := range guids {
		stream, err := bbs.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid})
		if err != nil {
			b.Fatalf("list %s: %v", guid, err)
		}
		for {
			resp, err := stream.Recv()
			if err != nil {
				break
			}
			for _, a := range resp.GetActualLrps() {
				crashes += a.GetCrashCount()
				if a.GetCrashCount() > 0 {
					reasons[a.GetCrashReason()]++
				}
				cells[a.GetCellId()]++
			}
		}
	}
	return crashes, reasons, cells
}

// readHistogram reads the rep's firewall setup histogram from its debug server.
func readHistogram(ctx context.Context, b *testing.B, url string) Histogram {
	b.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("metrics: status %d, %v", resp.StatusCode, err)
	}
	h, found, err := ParseHistogram(string(page), egressSetupMetric)
	if err != nil || !found {
		b.Fatalf("%s on %s: found %v, %v", egressSetupMetric, url, found, err)
	}
	return h
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
