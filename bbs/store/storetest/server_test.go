package storetest

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeHome is a DROVER_HOME whose postgres/ holds the given files.
func fakeHome(t *testing.T, files ...string) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "postgres"), 0o755))
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(home, "postgres", f), []byte("secret"), 0o600))
	}
	return home
}

func TestServerURLFindsTheClusterOfTheScript(t *testing.T) {
	for _, tc := range []struct {
		name         string
		env          map[string]string
		files        []string
		wantHost     string
		wantPassfile bool
	}{
		{name: "a cluster with passwords", files: []string{"pgpass", "drover.password"}, wantHost: "127.0.0.1:54329", wantPassfile: true},
		{name: "a cluster of an older script (trust)", wantHost: "127.0.0.1:54329"},
		{name: "another port", env: map[string]string{PortEnv: "54339"}, files: []string{"pgpass"}, wantHost: "127.0.0.1:54339", wantPassfile: true},
		{name: "a bad port is the default", env: map[string]string{PortEnv: "x"}, wantHost: "127.0.0.1:54329"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := fakeHome(t, tc.files...)
			t.Setenv(ServerURLEnv, "")
			t.Setenv(HomeEnv, home)
			t.Setenv(PortEnv, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			u, err := url.Parse(ServerURL())
			require.NoError(t, err)
			require.Equal(t, tc.wantHost, u.Host)
			require.Equal(t, "drover", u.User.Username())
			_, hasPassword := u.User.Password()
			require.False(t, hasPassword, "the URL holds no secret")
			require.Equal(t, "/drover", u.Path)
			require.Equal(t, "disable", u.Query().Get("sslmode"))
			if tc.wantPassfile {
				require.Equal(t, filepath.Join(home, "postgres", "pgpass"), u.Query().Get("passfile"))
			} else {
				require.False(t, u.Query().Has("passfile"))
			}
		})
	}
}

func TestPasswordFile(t *testing.T) {
	home := fakeHome(t, "drover.password")
	t.Setenv(HomeEnv, home)
	t.Setenv(ServerURLEnv, "")
	require.Equal(t, filepath.Join(home, "postgres", "drover.password"), PasswordFile())

	t.Setenv(HomeEnv, fakeHome(t))
	require.Empty(t, PasswordFile(), "no file, no password")

	t.Setenv(HomeEnv, home)
	t.Setenv(ServerURLEnv, "postgres://other@db/x")
	require.Empty(t, PasswordFile(), "an explicit server brings its own credentials")
}

func TestServerURLEnvWins(t *testing.T) {
	t.Setenv(ServerURLEnv, "postgres://other:pw@db:5432/x")
	require.Equal(t, "postgres://other:pw@db:5432/x", ServerURL())
}

func TestRelativeHomeIsUnderTheRepository(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.work"), nil, 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev", "postgres"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "postgres", "pgpass"), nil, 0o600))
	t.Setenv(RootEnv, root)
	t.Setenv(HomeEnv, "dev")
	t.Setenv(ServerURLEnv, "")
	u, err := url.Parse(ServerURL())
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "dev", "postgres", "pgpass"), u.Query().Get("passfile"))
}

func TestRedactedHidesPasswords(t *testing.T) {
	for _, raw := range []string{"postgres://u:s3cret@db/x", "postgres://u@db/x?password=s3cret", "host=db password=s3cret"} {
		require.NotContains(t, redacted(raw), "s3cret")
	}
}
