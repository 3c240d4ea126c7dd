package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/client"
	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// DesireLRPs desires one LRP per entry of lrps through the clients, concurrency at a
// time (worker w uses clients[w % len(clients)]), and times each DesireLRP call.
func DesireLRPs(ctx context.Context, clients []*client.Client, lrps []*modelsv1.DesiredLRP, concurrency int) (Throughput, error) {
	if err := checkClients(clients); err != nil {
		return Throughput{}, fmt.Errorf("desire: %w", err)
	}
	res, err := RunConcurrent(ctx, len(lrps), concurrency, func(ctx context.Context, w, i int) error {
		_, err := clients[w%len(clients)].DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrps[i]})
		return err
	})
	if err != nil {
		return Throughput{}, fmt.Errorf("desire: %w", err)
	}
	return NewThroughput(concurrency, res), nil
}

// checkClients reports an empty client list or a nil client in it.
func checkClients(clients []*client.Client) error {
	if len(clients) == 0 || slices.Contains(clients, nil) {
		return errors.New("no clients, or a nil one")
	}
	return nil
}

// LRPSet builds the DesiredLRPs of a domain that together have total instances, at
// most perLRP each: guids ProcessGuid(domain, 0..), the last LRP taking the remainder.
func LRPSet(domain string, total, perLRP int) []*modelsv1.DesiredLRP {
	if total <= 0 || perLRP <= 0 {
		return nil
	}
	lrps := make([]*modelsv1.DesiredLRP, 0, (total+perLRP-1)/perLRP)
	for i := 0; total > 0; i++ {
		n := min(perLRP, total)
		lrps = append(lrps, NewDesiredLRP(ProcessGuid(domain, i), domain, int32(n)))
		total -= n
	}
	return lrps
}

// StreamStats describes one ListActualLRPs stream.
type StreamStats struct {
	Rows, Batches, Bytes int
}

// ListActualLRPs reads every ActualLRP the filter selects from the stream; with
// measureBytes it also adds up the encoded size of each batch.
func ListActualLRPs(ctx context.Context, c *client.Client, req *bbsv1.ListActualLRPsRequest, measureBytes bool) (StreamStats, error) {
	if c == nil {
		return StreamStats{}, errors.New("list: nil client")
	}
	var st StreamStats
	err := client.EachActualLRPBatch(ctx, c, req, func(resp *bbsv1.ListActualLRPsResponse) error {
		st.Rows += len(resp.GetActualLrps())
		st.Batches++
		if measureBytes {
			st.Bytes += proto.Size(resp)
		}
		return nil
	})
	return st, err
}

// TimeInterleaved calls each of fs once untimed (a warm-up), then rounds times in turn,
// and returns the durations of the timed calls of each f: times[i][round]. It fails at
// the first error.
func TimeInterleaved(rounds int, fs ...func() error) ([][]time.Duration, error) {
	times := make([][]time.Duration, len(fs))
	for round := -1; round < rounds; round++ {
		for i, f := range fs {
			t0 := time.Now()
			if err := f(); err != nil {
				return nil, err
			}
			if round >= 0 {
				times[i] = append(times[i], time.Since(t0))
			}
		}
	}
	return times, nil
}

// NewListTiming summarises the durations of runs that each listed rows rows.
func NewListTiming(rows int, runs []time.Duration) ListTiming {
	s := Summarize(runs)
	return ListTiming{Runs: s, RowsPerSecond: Ratio(float64(rows)*1000, s.P50MS)}
}

// ListStore lists every ActualLRP straight from the store and checks the row count.
func ListStore(ctx context.Context, st store.ActualLRPDB, want int) error {
	if st == nil {
		return errors.New("store list: nil store")
	}
	rows, err := st.ListActualLRPs(ctx, store.ActualLRPFilter{})
	if err != nil {
		return fmt.Errorf("store list: %w", err)
	}
	if len(rows) != want {
		return fmt.Errorf("store list: %d rows, want %d", len(rows), want)
	}
	return nil
}

// rawListSQL reads every ActualLRP row in the store's order; rows are received but not
// decoded, which makes it the floor under the store's list: Postgres and the wire.
const rawListSQL = `SELECT * FROM actual_lrps ORDER BY process_guid, instance_index, presence`

// Querier is what ListPostgres needs: a *pgx.Conn or a *pgxpool.Pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ListPostgres runs rawListSQL, reads every row without decoding it and checks the row
// count.
func ListPostgres(ctx context.Context, q Querier, want int) error {
	if q == nil {
		return errors.New("raw list: nil querier")
	}
	rows, err := q.Query(ctx, rawListSQL)
	if err != nil {
		return fmt.Errorf("raw list: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("raw list: %w", err)
	}
	if n != want {
		return fmt.Errorf("raw list: %d rows, want %d", n, want)
	}
	return nil
}
