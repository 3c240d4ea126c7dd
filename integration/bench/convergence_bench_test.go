package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/bbs/client"
	"drover.dev/converger/pass"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Shape of the convergence benchmark (issue 4, acceptance 8): 1,000 DesiredLRPs × 100
// instances, 1% of the rows needing action.
const (
	convergeLRPs      = 1000
	convergeInstances = 100
	convergeDomain    = "bench-converge"
	convergeCells     = 10
	convergeGoneCell  = "bench-cell-gone"
	// Damage per pass: rows deleted (create-missing), CRASHED with an immediate
	// restart due (unclaim-crashed), RUNNING on a vanished cell (mark-suspect).
	convergeMissing = 400
	convergeCrashed = 300
	convergeVanish  = 300
	convergeActions = convergeMissing + convergeCrashed + convergeVanish
	seedWorkers     = 16
)

// BenchmarkConvergencePass times one full convergence pass (snapshot, plan, apply and
// report, through the converger's own pass runner over gRPC) against a real BBS on
// Postgres holding 100,000 ActualLRPs, 1% of which need action. Seeding and the damage
// done before each pass are not timed. Run it with
//
//	go test -run '^$' -bench ConvergencePass -benchtime 1x -timeout 600s ./integration/bench/
func BenchmarkConvergencePass(b *testing.B) {
	stack := devstacktest.New(b, devstacktest.Options{})
	bbs := devstacktest.Client(b, stack, 0)
	ctx, cancel := context.WithTimeout(b.Context(), 9*time.Minute)
	defer cancel()

	seedStart := time.Now()
	seedConvergence(ctx, b, bbs)
	db, err := pgx.Connect(ctx, stack.DatabaseURL)
	if err != nil {
		b.Fatalf("connect to the BBS database: %v", err)
	}
	defer db.Close(context.WithoutCancel(ctx))
	b.Logf("seeded %d DesiredLRPs × %d instances in %s", convergeLRPs, convergeInstances, time.Since(seedStart).Round(time.Millisecond))

	for _, workers := range []int{1, pass.DefaultWorkers} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			runner := pass.New(bbs, pass.Options{Owner: "bench-converger", Timeout: 2 * time.Minute, Workers: workers})
			timePasses(ctx, b, runner, db)
		})
	}
}

// timePasses runs one damaged pass per iteration and reports the phase times.
func timePasses(ctx context.Context, b *testing.B, runner *pass.Runner, db *pgx.Conn) {
	var snapshot, planned, apply time.Duration
	rows := 0
	for b.Loop() {
		b.StopTimer()
		damage(ctx, b, db)
		b.StartTimer()
		sum, err := runner.Run(ctx)
		if err != nil {
			b.Fatalf("pass: %v", err)
		}
		if sum.Applied != convergeActions || sum.Refused != 0 || sum.Failed != 0 {
			b.Fatalf("pass applied %d, refused %d, failed %d actions; want %d applied",
				sum.Applied, sum.Refused, sum.Failed, convergeActions)
		}
		snapshot += sum.Snapshot
		planned += sum.Plan
		apply += sum.Apply
		rows += int(sum.Pass.GetActualLrps())
	}
	n := time.Duration(b.N)
	total := (snapshot + planned + apply) / n
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(snapshot/n), "snapshot-ms")
	b.ReportMetric(ms(planned/n), "plan-ms")
	b.ReportMetric(ms(apply/n), "apply-ms")
	b.ReportMetric(ms(total), "total-ms")
	b.ReportMetric(float64(rows/b.N)/total.Seconds(), "rows/s")
	fmt.Printf("%s: pass over %d ActualLRPs with %d actions: snapshot %.0f ms, plan %.0f ms, apply %.0f ms, total %.0f ms (goal < 2000 ms)\n",
		b.Name(), rows/b.N, convergeActions, ms(snapshot/n), ms(planned/n), ms(apply/n), ms(total))
}

// seedConvergence makes the domain fresh, the cells present and the DesiredLRPs (the BBS
// creates their UNCLAIMED rows; no auctioneer runs, so nothing places them).
func seedConvergence(ctx context.Context, b *testing.B, bbs *client.Client) {
	b.Helper()
	if _, err := bbs.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: convergeDomain, TtlSeconds: 3600}); err != nil {
		b.Fatalf("upsert domain: %v", err)
	}
	for i := range convergeCells {
		presence := &modelsv1.CellPresence{CellId: fmt.Sprintf("bench-cell-%d", i), RepAddress: "127.0.0.1:1", Zone: "z1",
			Capacity: &modelsv1.CellCapacity{MemoryMb: 1 << 20, DiskMb: 1 << 20, Containers: 100_000}}
		if _, err := bbs.HeartbeatCell(ctx, &bbsv1.HeartbeatCellRequest{CellPresence: presence, TtlSeconds: 3600}); err != nil {
			b.Fatalf("heartbeat cell: %v", err)
		}
	}
	guids := make(chan string)
	errs := make(chan error, seedWorkers)
	var wg sync.WaitGroup
	for range seedWorkers {
		wg.Go(func() {
			for guid := range guids {
				if _, err := bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: convergeLRP(guid)}); err != nil {
					errs <- fmt.Errorf("desire %s: %w", guid, err)
					return
				}
			}
		})
	}
	for i := range convergeLRPs {
		guids <- lrpGUID(i)
	}
	close(guids)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// lrpGUID is the process guid of the i-th bench LRP (they sort by i).
func lrpGUID(i int) string { return fmt.Sprintf("bench-converge-%04d", i) }

// convergeLRP is a busybox LRP of convergeInstances instances in the bench domain.
func convergeLRP(guid string) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid: guid, Domain: convergeDomain, Instances: convergeInstances,
		Rootfs: "preloaded:busybox", MemoryMb: 32, DiskMb: 32, LogGuid: guid,
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "root"}}},
	}
}

// damage puts every row back to RUNNING on a live cell (undoing the previous pass's
// repairs), then breaks 1% of them: index 0 of the first LRPs is deleted, index 1 of
// the next is CRASHED once (restart due at once), index 2 of the next runs on a cell
// that has no presence.
func damage(ctx context.Context, b *testing.B, db *pgx.Conn) {
	b.Helper()
	const (
		ordinary = int16(modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY)
		suspect  = int16(modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT)
		running  = int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING)
		crashed  = int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED)
	)
	now := time.Now().UnixNano()
	guidIn := `process_guid >= $1 AND process_guid < $2`
	statements := []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM actual_lrps WHERE presence = $1`, []any{suspect}},
		{`UPDATE actual_lrps SET state = $1, cell_id = 'bench-cell-' || (instance_index % $2),
    instance_guid = 'ig-' || process_guid || '-' || instance_index, crash_count = 0, crash_reason = '',
    placement_error = '', since = $3, routable = true, modification_tag_index = modification_tag_index + 1
WHERE presence = $4`, []any{running, convergeCells, now, ordinary}},
		{`DELETE FROM actual_lrps WHERE instance_index = 0 AND ` + guidIn, []any{lrpGUID(0), lrpGUID(convergeMissing)}},
		{`UPDATE actual_lrps SET state = $3, cell_id = '', instance_guid = '', crash_count = 1, crash_reason = 'exit 1',
    routable = false WHERE instance_index = 1 AND ` + guidIn, []any{lrpGUID(convergeMissing), lrpGUID(convergeMissing + convergeCrashed), crashed}},
		{`UPDATE actual_lrps SET cell_id = $3 WHERE instance_index = 2 AND ` + guidIn,
			[]any{lrpGUID(convergeMissing + convergeCrashed), lrpGUID(convergeActions), convergeGoneCell}},
	}
	for _, s := range statements {
		if _, err := db.Exec(ctx, s.sql, s.args...); err != nil {
			b.Fatalf("damage: %v\n%s", err, s.sql)
		}
	}
	if _, err := db.Exec(ctx, `ANALYZE actual_lrps`); err != nil {
		b.Fatalf("analyze: %v", err)
	}
}
