// Package storetest gives tests a private Postgres database and a migrated store on it.
// The server comes from DROVER_TEST_DATABASE_URL, by default the one scripts/postgres.sh
// runs (see ServerURL); every database is dropped when its test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"drover.dev/bbs/store"
	"drover.dev/lib/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestKeyLabel and TestKeyPassphrase are the encryption key NewStore uses.
const (
	TestKeyLabel      = "test-key"
	TestKeyPassphrase = "drover test passphrase"
)

// NewDatabase creates a fresh, empty database and returns its URL; it is dropped (with
// any connections still open) when the test ends. When the server cannot be reached or
// refuses the connection, the test is skipped as needing Postgres (testenv.Missing: a
// failure under DROVER_REQUIRE_ALL).
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL()
	name := "drover_test_" + randomHex(8)
	err := admin(server, "CREATE DATABASE "+name)
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		testenv.Missing(t, "Postgres", fmt.Sprintf("%v (start it with scripts/postgres.sh start, or set %s)", err, ServerURLEnv))
	}
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		if err := admin(server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("storetest: parsing %s: %v", redacted(server), err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewStore opens and migrates a store on a fresh database with the test key; it is
// closed when the test ends.
func NewStore(t testing.TB) *store.Postgres {
	t.Helper()
	return NewStoreWithConfig(t, store.Config{})
}

// NewStoreWithConfig is NewStore with parts of the config set by the caller (a Clock,
// keys, MaxConns). An empty URL means a fresh database; no keys means the test key.
func NewStoreWithConfig(t testing.TB, cfg store.Config) *store.Postgres {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = NewDatabase(t)
	}
	if len(cfg.EncryptionKeys) == 0 {
		cfg.EncryptionKeys = map[string]string{TestKeyLabel: TestKeyPassphrase}
		cfg.ActiveKeyLabel = TestKeyLabel
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 10
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("storetest: opening the store: %v", err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("storetest: migrating: %v", err)
	}
	return s
}

// Clock is a settable time source for store.Config.Clock; the zero value starts at
// 2026-01-01 UTC. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current()
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.current().Add(d)
}

func (c *Clock) current() time.Time {
	if c.now.IsZero() {
		c.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return c.now
}

// admin runs one statement on the server's own database.
func admin(server, statement string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redacted(server), err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, statement); err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
