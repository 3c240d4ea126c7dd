package store_test

import (
	"fmt"
	"testing"

	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// seedRunningActualLRPs bulk-inserts rows RUNNING rows (1000 per process guid) with net
// info, internal routes on every 10th row and metric tags on every other row.
func seedRunningActualLRPs(b testing.TB, url string, rows int) {
	b.Helper()
	net, err := proto.Marshal(netInfo("10.0.0.1"))
	require.NoError(b, err)
	tags, err := proto.Marshal(&modelsv1.ActualLRP{MetricTags: map[string]string{"index": "7", "source_id": "app-7"}})
	require.NoError(b, err)
	_, err = rawDB(b, url).Exec(testContext(b), `INSERT INTO actual_lrps (process_guid, instance_index,
    presence, domain, state, instance_guid, cell_id, net_info, since, modification_tag_epoch,
    modification_tag_index, routable, availability_zone, internal_routes, metric_tags)
SELECT 'app-' || (i / 1000), i % 1000, 1, 'cf-apps', 3, 'instance-' || i, 'cell-' || (i % 200), $2,
    1700000000000000000 + i, 'epoch-' || i, 3, true, 'z' || (i % 3),
    CASE WHEN i % 10 = 0 THEN ARRAY['app-' || (i / 1000) || '.apps.internal'] ELSE '{}' END,
    CASE WHEN i % 2 = 0 THEN $3::bytea END
FROM generate_series(0, $1 - 1) AS i`, rows, net, tags)
	require.NoError(b, err)
}

func BenchmarkListActualLRPs100k(b *testing.B) {
	const rows = 100_000
	url := storetest.NewDatabase(b)
	s := storetest.NewStoreWithConfig(b, store.Config{URL: url})
	seedRunningActualLRPs(b, url, rows)
	ctx := testContext(b)

	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		lrps, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{})
		if err != nil || len(lrps) != rows {
			b.Fatalf("listed %d rows: %v", len(lrps), err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkDesireLRP(b *testing.B) {
	const instances = 10
	s := storetest.NewStore(b)
	ctx := testContext(b)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.DesireLRP(ctx, newDesiredLRP(fmt.Sprintf("bench-%d", n), instances)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lrps/s")
	b.ReportMetric(float64(n*(instances+1))/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSnapshot100k times a whole snapshot of 1000 LRPs × 100 instances, all
// messages consumed (scheduling infos plus actual LRPs per second in rows/s).
func BenchmarkSnapshot100k(b *testing.B) {
	const lrps, instances = 1000, 100
	s := storetest.NewStore(b)
	ctx := testContext(b)
	inParallel(b, lrps, func(i int) error {
		_, err := s.DesireLRP(ctx, newDesiredLRP(fmt.Sprintf("app-%04d", i), instances))
		return err
	})

	rows := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		err := s.Snapshot(ctx, func(m *bbsv1.SnapshotResponse) error {
			n += len(m.GetSchedulingInfos()) + len(m.GetActualLrps()) + len(m.GetTasks())
			return nil
		})
		if err != nil || n != lrps*(instances+1) {
			b.Fatalf("snapshot had %d rows: %v", n, err)
		}
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
