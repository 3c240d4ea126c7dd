package storetest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"drover.dev/bbs/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, storetest.ServerURL())
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists))
	return exists
}

func TestNewDatabaseIsPrivateAndDropped(t *testing.T) {
	var name string
	outer := t
	created := t.Run("create", func(t *testing.T) {
		first := storetest.NewDatabase(t)
		second := storetest.NewDatabase(t)
		require.NotEqual(t, first, second)
		u, err := url.Parse(first)
		require.NoError(t, err)
		name = strings.TrimPrefix(u.Path, "/")
		require.True(t, strings.HasPrefix(name, "drover_test_"))
		require.True(t, databaseExists(t, name))

		// A connection still open when the test ends does not stop the drop.
		conn, err := pgx.Connect(context.Background(), first)
		require.NoError(t, err)
		outer.Cleanup(func() { _ = conn.Close(context.Background()) })
	})
	if !created || name == "" {
		return // create failed, or was skipped for want of Postgres
	}
	require.False(t, databaseExists(t, name), "the database is dropped when its test ends")
}

func TestNewStoreIsMigrated(t *testing.T) {
	s := storetest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seq, err := s.LatestSequence(ctx)
	require.NoError(t, err)
	require.Zero(t, seq)
}

func TestClock(t *testing.T) {
	var c storetest.Clock
	start := c.Now()
	require.Equal(t, 2026, start.Year())
	require.Equal(t, start, c.Now(), "the clock only moves when told")
	c.Advance(time.Minute)
	require.Equal(t, start.Add(time.Minute), c.Now())
}
