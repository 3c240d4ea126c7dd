package target_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/target"
	"drover.dev/lib/tlsconfig"
)

// mkdirs creates each directory under root and returns root.
func mkdirs(t *testing.T, root string, dirs ...string) string {
	t.Helper()
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	return root
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFindHome(t *testing.T) {
	root := mkdirs(t, t.TempDir(), ".drover/certs", "a/b/c", "other/.drover", "bare")

	tests := []struct {
		name       string
		droverHome string
		workDir    string
		want       string
		wantErr    error
	}{
		{name: "in the working directory", workDir: root, want: filepath.Join(root, ".drover")},
		{name: "walking up", workDir: filepath.Join(root, "a/b/c"), want: filepath.Join(root, ".drover")},
		{name: "nearest wins", workDir: filepath.Join(root, "other"), want: filepath.Join(root, "other/.drover")},
		{name: "DROVER_HOME holding .drover", droverHome: filepath.Join(root, "other"), workDir: root, want: filepath.Join(root, "other/.drover")},
		{name: "DROVER_HOME is the directory itself", droverHome: filepath.Join(root, "bare"), workDir: root, want: filepath.Join(root, "bare")},
		{name: "no working directory", wantErr: target.ErrNoHome},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := target.FindHome(tt.droverHome, tt.workDir)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFindHomeNotFound(t *testing.T) {
	// t.TempDir lives under the system temp directory, which holds no .drover above it
	// unless someone made one there; skip the walk beyond our dir by checking first.
	dir := t.TempDir()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".drover")); err == nil {
			t.Skipf("a .drover directory exists above the temp dir at %s", d)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	_, err := target.FindHome("", dir)
	require.ErrorIs(t, err, target.ErrNoHome)

	_, err = target.Resolve(target.Settings{}, envOf(nil), dir)
	require.ErrorIs(t, err, target.ErrNoHome)
}

func TestResolve(t *testing.T) {
	root := mkdirs(t, t.TempDir(), ".drover/certs", "work/sub", "elsewhere/.drover")
	certs := filepath.Join(root, ".drover/certs")
	otherCerts := filepath.Join(root, "elsewhere/.drover/certs")
	workDir := filepath.Join(root, "work/sub")

	tests := []struct {
		name  string
		flags target.Settings
		env   map[string]string
		want  target.Target
	}{
		{
			name: "discovered defaults",
			want: target.Target{
				Address: target.DefaultAddress,
				Home:    filepath.Join(root, ".drover"),
				TLS: tlsFiles(filepath.Join(certs, "ca.crt"), filepath.Join(certs, "client.crt"),
					filepath.Join(certs, "client.key")),
			},
		},
		{
			name: "environment overrides defaults",
			env: map[string]string{
				target.EnvAddress: "10.0.0.1:8889",
				target.EnvCACert:  "/env/ca.crt",
				target.EnvHome:    filepath.Join(root, "elsewhere"),
			},
			want: target.Target{
				Address: "10.0.0.1:8889",
				Home:    filepath.Join(root, "elsewhere/.drover"),
				TLS: tlsFiles("/env/ca.crt", filepath.Join(otherCerts, "client.crt"),
					filepath.Join(otherCerts, "client.key")),
			},
		},
		{
			name:  "flags override environment",
			flags: target.Settings{Address: "bbs:1", ClientKey: "/flag/key"},
			env:   map[string]string{target.EnvAddress: "env:2", target.EnvClientKey: "/env/key"},
			want: target.Target{
				Address: "bbs:1",
				Home:    filepath.Join(root, ".drover"),
				TLS: tlsFiles(filepath.Join(certs, "ca.crt"), filepath.Join(certs, "client.crt"),
					"/flag/key"),
			},
		},
		{
			name:  "all files given: no discovery needed",
			flags: target.Settings{CACert: "/f/ca", ClientCert: "/f/cert"},
			env:   map[string]string{target.EnvClientKey: "/e/key", target.EnvHome: "/does/not/matter"},
			want: target.Target{
				Address: target.DefaultAddress,
				TLS:     tlsFiles("/f/ca", "/f/cert", "/e/key"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := target.Resolve(tt.flags, envOf(tt.env), workDir)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func tlsFiles(ca, cert, key string) tlsconfig.Files {
	return tlsconfig.Files{CAFile: ca, CertFile: cert, KeyFile: key}
}
