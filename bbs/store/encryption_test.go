package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"drover.dev/bbs/crypt"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// storedBlobs returns every encrypted blob in the database.
func storedBlobs(t testing.TB, db *pgx.Conn) [][]byte {
	t.Helper()
	rows, err := db.Query(testContext(t), `SELECT run_info FROM desired_lrps
UNION ALL SELECT task_definition FROM tasks UNION ALL SELECT payload FROM events`)
	require.NoError(t, err)
	blobs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	return blobs
}

func storedLabel(t testing.TB, db *pgx.Conn) string {
	t.Helper()
	var label string
	require.NoError(t, db.QueryRow(testContext(t),
		`SELECT value FROM configurations WHERE id = 'encryption_key_label'`).Scan(&label))
	return label
}

func TestSecretsAreEncryptedAtRest(t *testing.T) {
	t.Parallel()
	s, db := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	_, err := s.DesireTask(ctx, "task", "d", newTaskDefinition())
	require.NoError(t, err)

	blobs := storedBlobs(t, db)
	require.Len(t, blobs, 1+1+3) // run info, task definition, 3 events
	for _, b := range blobs {
		require.False(t, bytes.Contains(b, []byte(secretEnvValue)), "secret stored in clear")
		label, err := crypt.Label(b)
		require.NoError(t, err)
		require.Equal(t, storetest.TestKeyLabel, label)
	}
	// Nothing anywhere in the database holds the secret in clear.
	var leaks int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM (
    SELECT process_guid FROM desired_lrps WHERE desired_lrps::text LIKE '%' || $1 || '%'
    UNION ALL SELECT guid FROM tasks WHERE tasks::text LIKE '%' || $1 || '%'
    UNION ALL SELECT sequence::text FROM events WHERE events::text LIKE '%' || $1 || '%') leaks`,
		secretEnvValue).Scan(&leaks))
	require.Zero(t, leaks)
	require.Equal(t, storetest.TestKeyLabel, storedLabel(t, db))
}

func openStore(t testing.TB, url string, keys map[string]string, active string) (*store.Postgres, error) {
	t.Helper()
	s, err := store.Open(testContext(t), store.Config{URL: url, EncryptionKeys: keys, ActiveKeyLabel: active, MaxConns: 5},
		slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	t.Cleanup(s.Close)
	return s, s.Migrate(testContext(t))
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	db := rawDB(t, url)
	ctx := testContext(t)

	old, err := openStore(t, url, map[string]string{"v1": "first passphrase"}, "v1")
	require.NoError(t, err)
	desire(t, old, newDesiredLRP("app", 2))
	_, err = old.DesireTask(ctx, "task", "d", newTaskDefinition())
	require.NoError(t, err)
	old.Close()

	// Starting with only an unrelated key is refused: the data would be unreadable.
	_, err = openStore(t, url, map[string]string{"other": "x"}, "other")
	require.ErrorContains(t, err, `"v1"`)
	require.Equal(t, "v1", storedLabel(t, db))

	rotated, err := openStore(t, url, map[string]string{"v1": "first passphrase", "v2": "second passphrase"}, "v2")
	require.NoError(t, err)
	require.Equal(t, "v2", storedLabel(t, db))
	for _, b := range storedBlobs(t, db) {
		label, err := crypt.Label(b)
		require.NoError(t, err)
		require.Equal(t, "v2", label)
	}
	desire(t, rotated, newDesiredLRP("after-rotation", 0))
	rotated.Close()

	// The old key can go now: everything reads with v2 alone.
	current, err := openStore(t, url, map[string]string{"v2": "second passphrase"}, "v2")
	require.NoError(t, err)
	lrp, err := current.GetDesiredLRP(ctx, "app")
	require.NoError(t, err)
	require.Equal(t, secretEnvValue, lrp.Env[0].Value)
	task, err := current.GetTask(ctx, "task")
	require.NoError(t, err)
	require.Equal(t, secretEnvValue, task.TaskDefinition.Env[0].Value)
	events, err := current.EventsAfter(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 5)
}

func TestKeyRotationInBatches(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	db := rawDB(t, url)
	old, err := openStore(t, url, map[string]string{"v1": "one"}, "v1")
	require.NoError(t, err)
	desire(t, old, newDesiredLRP("big", 1200)) // 1201 events: more than two batches
	old.Close()

	_, err = openStore(t, url, map[string]string{"v1": "one", "v2": "two"}, "v2")
	require.NoError(t, err)
	var stale int
	require.NoError(t, db.QueryRow(testContext(t), `SELECT count(*) FROM events
WHERE substring(payload FROM 2 FOR get_byte(payload, 0)) <> 'v2'::bytea`).Scan(&stale))
	require.Zero(t, stale)
}

func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	const replicas = 3
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(context.Background(), store.Config{URL: url, MaxConns: 3,
				EncryptionKeys: map[string]string{"k": "p"}, ActiveKeyLabel: "k"}, nil)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs <- s.Migrate(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Migrating again is a no-op.
	s, err := openStore(t, url, map[string]string{"k": "p"}, "k")
	require.NoError(t, err)
	require.NoError(t, s.Ping(testContext(t)))
}

func TestOpenRejectsBadConfig(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	tests := []struct {
		name string
		cfg  store.Config
	}{
		{"no url", store.Config{EncryptionKeys: map[string]string{"k": "p"}, ActiveKeyLabel: "k"}},
		{"no keys", store.Config{URL: storetest.DefaultServerURL}},
		{"active key missing", store.Config{URL: storetest.DefaultServerURL, EncryptionKeys: map[string]string{"k": "p"}, ActiveKeyLabel: "x"}},
		{"bad url", store.Config{URL: "postgres://%zz", EncryptionKeys: map[string]string{"k": "p"}, ActiveKeyLabel: "k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := store.Open(ctx, tt.cfg, nil)
			require.Error(t, err)
		})
	}
}
