package main

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/store/storetest"
	"drover.dev/lib/config"
	"drover.dev/lib/testenv"
)

// databaseWithoutPassfile is a fresh database's URL without the passfile= that
// storetest adds, so that only database_password_file can supply the password.
func databaseWithoutPassfile(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(storetest.NewDatabase(t))
	require.NoError(t, err)
	q := u.Query()
	q.Del("passfile")
	u.RawQuery = q.Encode()
	return u.String()
}

// TestDatabasePasswordFile: the BBS connects with the password of
// database_password_file and never logs it; a wrong one stops it with the database's
// refusal, also not logged. It needs the password cluster of scripts/postgres.sh.
func TestDatabasePasswordFile(t *testing.T) {
	passwordFile := storetest.PasswordFile()
	if passwordFile == "" {
		testenv.Missing(t, "the password cluster of scripts/postgres.sh",
			"no readable drover.password (start it with scripts/postgres.sh start; an older version's cluster, or one of DROVER_TEST_DATABASE_URL, takes no password file)")
	}
	password, err := config.ReadSecretFile(passwordFile)
	require.NoError(t, err)

	t.Run("the right password", func(t *testing.T) {
		certs := newCertSet(t)
		cfg := testConfig(t, databaseWithoutPassfile(t), certs)
		cfg["database_password_file"] = passwordFile
		p := startBBS(t, "-config", writeConfig(t, cfg))
		p.waitServing(t, dial(t, cfg["grpc_address"].(string), certs.client(t)), startupTimeout)
		require.Eventually(t, func() bool { return slices.Contains(p.logMessages(), "bbs-started") }, 10*time.Second, 50*time.Millisecond)
		require.Contains(t, p.Output(), passwordFile, "the start log names the file")
		require.NotContains(t, p.Output(), password)
	})

	t.Run("a wrong password", func(t *testing.T) {
		wrong := filepath.Join(t.TempDir(), "wrong.password")
		require.NoError(t, os.WriteFile(wrong, []byte("not-the-password-4f2a"), 0o600))
		cfg := testConfig(t, databaseWithoutPassfile(t), newCertSet(t))
		cfg["database_password_file"] = wrong
		p := startBBS(t, "-config", writeConfig(t, cfg))
		require.NotEqual(t, 0, p.WaitExit(t, startupTimeout))
		require.Contains(t, p.logMessages(), "bbs-failed-to-start")
		require.Contains(t, p.Output(), "password authentication failed")
		require.NotContains(t, p.Output(), "not-the-password-4f2a")
	})

	t.Run("no password", func(t *testing.T) {
		cfg := testConfig(t, databaseWithoutPassfile(t), newCertSet(t))
		p := startBBS(t, "-config", writeConfig(t, cfg))
		require.NotEqual(t, 0, p.WaitExit(t, startupTimeout))
		require.Contains(t, p.logMessages(), "bbs-failed-to-start")
	})
}
