package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func passwordFile(t *testing.T, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db.password")
	require.NoError(t, os.WriteFile(path, []byte(password+"\n"), 0o600))
	return path
}

// withDatabaseFields returns the minimal configuration with the given fields set.
func withDatabaseFields(t *testing.T, fields map[string]any) string {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(minimal), &doc))
	maps.Copy(doc, fields)
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return string(out)
}

func TestDatabasePasswordFileIsRead(t *testing.T) {
	file := passwordFile(t, "s3cret")
	_, err := Load(write(t, withField(t, "database_password_file", file)))
	require.Error(t, err, "minimal's URL holds a password already")
	require.ErrorContains(t, err, "database_password_file: database_url already holds a password")

	cfg, err := Load(write(t, withDatabaseFields(t, map[string]any{
		"database_url":           "postgres://drover@127.0.0.1:54329/drover?sslmode=disable",
		"database_password_file": file,
	})))
	require.NoError(t, err)
	require.Equal(t, file, cfg.DatabasePasswordFile)
	dsn, err := cfg.DatabaseConnString()
	require.NoError(t, err)
	require.Equal(t, "postgres://drover:s3cret@127.0.0.1:54329/drover?sslmode=disable", dsn)

	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("bbs-starting", "config", *cfg)
	require.NotContains(t, logged.String(), "s3cret")
	require.Contains(t, logged.String(), file)
}

func TestDatabasePasswordInOnePlace(t *testing.T) {
	for _, url := range []string{
		"postgres://drover:pw@db/drover",
		"postgres://drover@db/drover?password=pw",
		"host=db user=drover password=pw",
		"host=db password = 'pw'",
	} {
		c := Config{DatabaseURL: url, DatabasePasswordFile: "/run/secrets/db"}
		require.ErrorContains(t, c.validDatabasePassword(), "database_password_file", url)
		c.DatabasePasswordFile = ""
		require.NoError(t, c.validDatabasePassword(), "without a file, the URL may hold the password")
	}
	for _, url := range []string{"postgres://drover@db/drover", "host=db user=drover", "host=db user=passwordless"} {
		c := Config{DatabaseURL: url, DatabasePasswordFile: "/run/secrets/db"}
		require.NoError(t, c.validDatabasePassword(), url)
	}
}

// TestDatabaseConnStringReachesTheDriver: the password, whatever its characters, is what
// pgx parses out of the connection string, for URLs and keyword/value strings alike.
func TestDatabaseConnStringReachesTheDriver(t *testing.T) {
	for _, password := range []string{"plain", `qu'ote\back slash`, "p@ss:w/rd?#%", "ünï"} {
		for _, url := range []string{"postgres://drover@db:5432/drover?sslmode=disable", "host=db port=5432 user=drover dbname=drover sslmode=disable"} {
			c := Config{DatabaseURL: url, DatabasePasswordFile: passwordFile(t, password)}
			dsn, err := c.DatabaseConnString()
			require.NoError(t, err)
			parsed, err := pgconn.ParseConfig(dsn)
			require.NoError(t, err, url)
			require.Equal(t, password, parsed.Password, url)
			require.Equal(t, "drover", parsed.User)
			require.Equal(t, "drover", parsed.Database)
		}
	}
}

func TestDatabaseConnStringErrors(t *testing.T) {
	c := Config{DatabaseURL: "postgres://drover@db/drover"}
	dsn, err := c.DatabaseConnString()
	require.NoError(t, err)
	require.Equal(t, c.DatabaseURL, dsn, "without a file, database_url as it is")

	c.DatabasePasswordFile = filepath.Join(t.TempDir(), "missing")
	_, err = c.DatabaseConnString()
	require.ErrorContains(t, err, "database_password_file")

	c.DatabasePasswordFile = passwordFile(t, "")
	_, err = c.DatabaseConnString()
	require.ErrorContains(t, err, "empty")
}
