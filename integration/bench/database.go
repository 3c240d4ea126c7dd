package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"drover.dev/bbs/store/storetest"
)

// DefaultAdminURL is the private Postgres that scripts/postgres.sh starts, as its role
// drover (which may create databases), with where its password is (storetest.ServerURL;
// DROVER_TEST_DATABASE_URL replaces it).
func DefaultAdminURL() string { return storetest.ServerURL() }

// Database is a private database created for one run.
type Database struct {
	// Name is the database name, bench_<random>.
	Name string
	// URL reaches the database with the admin URL's credentials.
	URL string
	// ServerVersion is what SELECT version() returned.
	ServerVersion string

	adminURL string
}

// CreateDatabase creates a fresh database bench_<random> on the server of adminURL,
// which must name a role allowed to create databases.
func CreateDatabase(ctx context.Context, adminURL string) (*Database, error) {
	u, err := url.Parse(adminURL)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("admin url %q: not a postgres:// URL", adminURL)
	}
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	name := "bench_" + hex.EncodeToString(suffix)
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return nil, fmt.Errorf("query server version: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	version, _, _ = strings.Cut(version, " on ")
	return &Database{Name: name, URL: u.String(), ServerVersion: version, adminURL: adminURL}, nil
}

// Drop drops the database, closing any connection still open to it.
func (d *Database) Drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, d.adminURL)
	if err != nil {
		return fmt.Errorf("connect to drop %s: %w", d.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", d.Name, err)
	}
	return nil
}
