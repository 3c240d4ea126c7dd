package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	for _, tc := range []struct {
		name, content, want, err string
	}{
		{name: "plain", content: "s3cret", want: "s3cret"},
		{name: "newline", content: "s3cret\n", want: "s3cret"},
		{name: "crlf", content: "s3cret\r\n", want: "s3cret"},
		{name: "inner spaces kept", content: " a b \n", want: " a b "},
		{name: "empty", content: "", err: "empty"},
		{name: "only a newline", content: "\n", err: "empty"},
		{name: "too large", content: strings.Repeat("x", MaxSecretFileBytes+1), err: "larger than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadSecretFile(write(tc.name, tc.content))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "xxxx", "the content is never in the error")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := ReadSecretFile(filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, "missing")
}

func TestUserPassword(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		username, password, file string
		err                      string
	}{
		{name: "none"},
		{name: "password file", username: "u", file: "/f"},
		{name: "inline password", username: "u", password: "p"},
		{name: "both", username: "u", password: "p", file: "/f", err: "nats_password_file: give nats_password_file or nats_password, not both"},
		{name: "username alone", username: "u", err: "nats_password_file: nats_username needs a password: nats_password_file (or nats_password)"},
		{name: "password alone", password: "p", err: "nats_username: is required with a password"},
		{name: "file alone", file: "/f", err: "nats_username: is required with a password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := UserPassword("nats", tc.username, tc.password, tc.file)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestPassword(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))
	for _, tc := range []struct{ inline, file, want string }{
		{"", "", ""},
		{"inline", "", "inline"},
		{"", file, "from-file"},
	} {
		got, err := Password(tc.inline, tc.file)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	_, err := Password("", file+".missing")
	require.Error(t, err)
}

// TestRedactURL: a password in the user info or the query is hidden; keyword/value
// strings are hidden whole; nothing else changes.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://drover:s3cret@db:5432/drover?sslmode=disable": "postgres://drover:xxxxx@db:5432/drover?sslmode=disable",
		"postgres://drover@db/drover?password=s3cret":             "postgres://drover@db/drover?password=xxxxx",
		"postgres://drover@db/drover":                             "postgres://drover@db/drover",
		"host=db user=drover password=s3cret":                     "[redacted]",
		"":                                                        "",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
