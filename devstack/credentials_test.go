package devstack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"drover.dev/devstack/natstest"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/testenv"
)

// TestDevstackCredentials (issue 12, acceptance 5): the private Postgres and NATS that
// `make up` starts, through the same scripts, in a home and on ports of the test's own,
// refuse clients without the password and serve those with it; the BBS runs as the
// non-superuser role drover with its password from a file; and the instances an older
// version of the scripts left (trust, a superuser role, a NATS without users) are
// switched over by the next start, their data kept.
func TestDevstackCredentials(t *testing.T) {
	testenv.RequireRoot(t, "scripts/postgres.sh runs a cluster of its own as the postgres user")
	if bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl"); len(bins) == 0 {
		testenv.Missing(t, "Postgres", "no /usr/lib/postgresql/*/bin/pg_ctl: run scripts/install-deps.sh (postgresql)")
	}
	ports, err := freePorts(5)
	require.NoError(t, err)
	t.Setenv("DROVER_PG_PORT", strconv.Itoa(ports[0]))
	t.Setenv("DROVER_NATS_PORT", strconv.Itoa(ports[1]))
	root, err := FindRoot()
	require.NoError(t, err)
	home := t.TempDir()
	for _, dir := range []string{filepath.Dir(home), home} {
		require.NoError(t, os.Chmod(dir, 0o755)) // the postgres user walks into it
	}
	ctx := t.Context()
	t.Cleanup(func() {
		_ = DownHome(context.Background(), root, home)
		_ = StopNATS(context.Background(), root, home)
	})

	s, err := Up(ctx, Options{Root: root, Home: home, Cells: -1, Logf: t.Logf,
		Ports: Ports{GRPC: ports[2], HTTP: ports[3], Debug: ports[4]}})
	require.NoError(t, err, "make up's start of Postgres and the BBS")
	url := s.DatabaseURL
	require.NotContains(t, url, passwordOf(t, s.DatabasePasswordFile), "the URL holds no password")
	require.Equal(t, s.DatabasePasswordFile, s.BBS[0].Config.DatabasePasswordFile)
	require.NoError(t, s.BBS[0].Healthy(ctx), "the BBS connects with database_password_file")

	t.Run("postgres refuses a client without the password", func(t *testing.T) {
		requirePostgresRefuses(t, url)
		requirePostgresRefuses(t, url+"&password=guessed")
		if psql, err := exec.LookPath("psql"); err == nil {
			out, err := exec.CommandContext(ctx, psql, "-w", url, "-c", "SELECT 1").CombinedOutput()
			require.Error(t, err, "psql without the password")
			require.Contains(t, string(out), "no password supplied")
		}
		// Over the socket too, for every role.
		socket := filepath.Join(home, "postgres", "run")
		for _, role := range []string{"drover", "postgres"} {
			requirePostgresRefuses(t, "host="+socket+" port="+strconv.Itoa(ports[0])+" user="+role+" dbname=postgres")
		}
	})

	t.Run("postgres serves the drover role with its password, not as a superuser", func(t *testing.T) {
		requireDroverRole(t, url, filepath.Join(home, "postgres", "pgpass"))
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "postgres.sh"), "psql", "-Atc", "SELECT current_user")
		cmd.Env = append(os.Environ(), "DROVER_HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "scripts/postgres.sh psql: %s", out)
		require.Equal(t, "drover", strings.TrimSpace(string(out)))
	})

	n, err := StartNATS(ctx, root, home)
	require.NoError(t, err)
	t.Run("nats refuses a client without the password and enforces the users' permissions", func(t *testing.T) {
		natstest.RequirePolicy(t, n.URL, func(user string) string { return passwordOf(t, n.PasswordFiles[user]) })
	})

	t.Run("the instances of an older version are switched over", func(t *testing.T) {
		downgradePostgres(t, home, url)
		require.NoError(t, StopNATS(ctx, root, home))
		natsPort := strconv.Itoa(ports[1])
		old := exec.Command("setsid", "nats-server", "-a", "127.0.0.1", "-p", natsPort, "-P", filepath.Join(home, "nats", "nats-server.pid"))
		require.NoError(t, old.Start(), "a nats-server without users, as the older script ran it")
		go func() { _ = old.Wait() }()
		require.Eventually(t, func() bool {
			nc, err := nats.Connect(n.URL)
			if err != nil {
				return false
			}
			nc.Close()
			return true
		}, 10*time.Second, 50*time.Millisecond, "the older server takes anyone")

		_, err := StartPostgres(ctx, root, home)
		require.NoError(t, err)
		requirePostgresRefuses(t, url)
		requireDroverRole(t, url, filepath.Join(home, "postgres", "pgpass"))
		conn := connectWithPassfile(t, url, filepath.Join(home, "postgres", "pgpass"))
		var kept int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM kept_across_the_switch").Scan(&kept))
		require.Equal(t, 1, kept, "the data of the older cluster")

		n2, err := StartNATS(ctx, root, home)
		require.NoError(t, err)
		natstest.RequirePolicy(t, n2.URL, func(user string) string { return passwordOf(t, n2.PasswordFiles[user]) })
	})
}

// passwordOf reads a password file.
func passwordOf(t *testing.T, file string) string {
	t.Helper()
	password, err := libconfig.ReadSecretFile(file)
	require.NoError(t, err)
	return password
}

// requirePostgresRefuses checks that connecting with connString fails authentication.
func requirePostgresRefuses(t *testing.T, connString string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err == nil {
		_ = conn.Close(ctx)
	}
	require.Error(t, err, "connected without the password: %s", connString)
	msg := err.Error()
	require.True(t, strings.Contains(msg, "password authentication failed") || strings.Contains(msg, "no password") ||
		strings.Contains(msg, "SASL"), "refused for the password: %v", err)
}

// connectWithPassfile connects to url with the password from a libpq password file.
func connectWithPassfile(t *testing.T, url, passfile string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url+"&passfile="+passfile)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// requireDroverRole checks that the password opens the database as drover, a role that
// is not a superuser, may create databases (tests do), and owns the database drover.
func requireDroverRole(t *testing.T, url, passfile string) {
	t.Helper()
	conn := connectWithPassfile(t, url, passfile)
	var user, owner string
	var super, createDB, createRole bool
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT current_user, r.rolsuper, r.rolcreatedb, r.rolcreaterole,
		pg_get_userbyid(d.datdba) FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = 'drover'`).
		Scan(&user, &super, &createDB, &createRole, &owner))
	require.Equal(t, "drover", user)
	require.False(t, super, "drover is not a superuser")
	require.False(t, createRole)
	require.True(t, createDB)
	require.Equal(t, "drover", owner)
}

// downgradePostgres turns the cluster of home into what an older scripts/postgres.sh
// made: trust for every connection and drover a superuser, with a table to keep.
func downgradePostgres(t *testing.T, home, url string) {
	t.Helper()
	conn := connectWithPassfile(t, url, filepath.Join(home, "postgres", "pgpass"))
	_, err := conn.Exec(t.Context(), "CREATE TABLE kept_across_the_switch (x int); INSERT INTO kept_across_the_switch VALUES (1)")
	require.NoError(t, err)
	admin, err := pgx.Connect(t.Context(), url+"&user=postgres&password="+passwordOf(t, filepath.Join(home, "postgres", "admin.password")))
	require.NoError(t, err)
	defer admin.Close(context.Background())
	_, err = admin.Exec(t.Context(), "ALTER ROLE drover SUPERUSER PASSWORD NULL")
	require.NoError(t, err)
	data := filepath.Join(home, "postgres", "data")
	trust := "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n"
	require.NoError(t, os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(trust), 0o600))
	_, err = admin.Exec(t.Context(), "SELECT pg_reload_conf()")
	require.NoError(t, err)
	for _, f := range []string{"pgpass", "drover.password", "admin.password"} { // the older script had none
		require.NoError(t, os.Remove(filepath.Join(home, "postgres", f)))
	}
	require.Eventually(t, func() bool {
		c, err := pgx.Connect(t.Context(), url)
		if err != nil {
			return false
		}
		_ = c.Close(context.Background())
		return true
	}, 10*time.Second, 50*time.Millisecond, "trust: no password needed")
}
