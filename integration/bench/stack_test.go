package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/bbs/store"
	"drover.dev/lib/testenv"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// startStack starts a stack on the private Postgres, skipping when it is not running.
func startStack(t *testing.T) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, DefaultAdminURL())
	if err != nil {
		testenv.Missing(t, "Postgres", fmt.Sprintf("not reachable at %s (scripts/postgres.sh start): %v", DefaultAdminURL(), err))
	}
	require.NoError(t, conn.Close(ctx))
	stack, err := StartStack(t.Context(), StackConfig{AdminURL: DefaultAdminURL(), MaxConns: 4})
	require.NoError(t, err)
	return stack
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), DefaultAdminURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	return n == 1
}

func TestRunMeasuresEveryScenarioAndCleansUp(t *testing.T) {
	stack := startStack(t)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = stack.Close()
		}
	})
	name := stack.Database.Name
	require.True(t, databaseExists(t, name))

	cfg := Config{Settings: Settings{LRPs: 6, Actuals: 25, InstancesPerLRP: 10, Claims: 4, Concurrency: 3, ListRuns: 2, MaxConns: 4, ListRunning: 12}}
	report, err := Run(t.Context(), stack, cfg)
	require.NoError(t, err)

	require.Equal(t, 6, report.Desire.Ops)
	require.Equal(t, 6, report.Desire.Latency.Count)
	require.Equal(t, 25, report.List.Rows)
	require.Equal(t, 3, report.List.Seed.Ops, "25 instances at 10 per LRP is 3 LRPs")
	require.Equal(t, 2, report.List.GRPC.Runs.Count)
	require.Equal(t, 2, report.List.Store.Runs.Count)
	require.Equal(t, 2, report.List.Postgres.Runs.Count)
	require.Positive(t, report.List.GRPCResponseBytes)
	require.Positive(t, report.List.GRPCToStoreRatio)
	require.Equal(t, 4, report.ClaimStart.Pairs.Ops)
	require.Equal(t, 4, report.ClaimStart.Claim.Count)
	require.Equal(t, 4, report.ClaimStart.Start.Count)
	require.Contains(t, report.Machine.Postgres, "PostgreSQL")
	require.NotEmpty(t, report.Machine.LoadStart)
	require.NotEmpty(t, report.Machine.LoadEnd)

	listed, err := stack.Store.ListActualLRPs(t.Context(), store.ActualLRPFilter{Domain: ListDomain})
	require.NoError(t, err)
	running := 0
	for _, a := range listed {
		if a.GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING {
			running++
		}
	}
	require.Equal(t, 12, running, "ListRunning instances are started before listing")
	require.Equal(t, 12, report.List.Running)

	desired, err := stack.Store.ListActualLRPs(t.Context(), store.ActualLRPFilter{Domain: DesireDomain})
	require.NoError(t, err)
	require.Len(t, desired, 6)
	started, err := stack.Store.ListActualLRPs(t.Context(), store.ActualLRPFilter{Domain: ClaimDomain})
	require.NoError(t, err)
	require.Len(t, started, 4)
	for _, a := range started {
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, a.GetState(), a.GetProcessGuid())
		require.NotEmpty(t, a.GetCellId())
		require.NotEmpty(t, a.GetNetInfo().GetAddress())
	}

	closed = true
	require.NoError(t, stack.Close())
	require.False(t, databaseExists(t, name), "Close drops the database")
}

func TestClaimStartFailsOnMissingInstances(t *testing.T) {
	stack := startStack(t)
	t.Cleanup(func() { require.NoError(t, stack.Close()) })
	clients, err := stack.NewClients(2)
	require.NoError(t, err)
	lrps := LRPSet(ClaimDomain, 3, 1)
	_, err = DesireLRPs(t.Context(), clients, lrps, 2)
	require.NoError(t, err)
	keys := FirstInstances(lrps)
	_, err = ClaimStart(t.Context(), clients, keys, 2)
	require.NoError(t, err)

	for i := range keys {
		keys[i].Index = 5 // no such instance
	}
	_, err = ClaimStart(t.Context(), clients, keys, 2)
	require.ErrorContains(t, err, "claim")
}
