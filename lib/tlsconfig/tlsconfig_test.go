package tlsconfig_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

func TestServerAndClientConfigs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	files := tlsconfig.Files{
		CAFile:   filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "bbs.crt"),
		KeyFile:  filepath.Join(dir, "bbs.key"),
	}
	require.True(t, files.Enabled())

	server, err := files.Server()
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, server.ClientAuth)
	require.Equal(t, uint16(tls.VersionTLS13), server.MinVersion)
	require.NotNil(t, server.ClientCAs)
	require.Len(t, server.Certificates, 1)

	client, err := files.Client()
	require.NoError(t, err)
	require.NotNil(t, client.RootCAs)
	require.Len(t, client.Certificates, 1)

	both, bothClient, err := files.ServerAndClient()
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, both.ClientAuth)
	require.Equal(t, uint16(tls.VersionTLS13), both.MinVersion)
	require.True(t, server.ClientCAs.Equal(both.ClientCAs))
	require.Equal(t, server.Certificates[0].Certificate, both.Certificates[0].Certificate)
	require.True(t, client.RootCAs.Equal(bothClient.RootCAs))
	require.Equal(t, uint16(tls.VersionTLS13), bothClient.MinVersion)
	require.Equal(t, client.Certificates[0].Certificate, bothClient.Certificates[0].Certificate)
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	path := func(name string) string { return filepath.Join(dir, name) }
	notPEM := path("not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))

	tests := []struct {
		name  string
		files tlsconfig.Files
		want  string
	}{
		{name: "no ca_file", files: tlsconfig.Files{CertFile: "c", KeyFile: "k"}, want: "ca_file is required"},
		{name: "no cert_file", files: tlsconfig.Files{CAFile: "a", KeyFile: "k"}, want: "cert_file is required"},
		{name: "no key_file", files: tlsconfig.Files{CAFile: "a", CertFile: "c"}, want: "key_file is required"},
		{name: "missing ca file", files: tlsconfig.Files{CAFile: path("absent"), CertFile: path("bbs.crt"), KeyFile: path("bbs.key")}, want: "read ca_file"},
		{name: "ca file without PEM", files: tlsconfig.Files{CAFile: notPEM, CertFile: path("bbs.crt"), KeyFile: path("bbs.key")}, want: "no PEM certificate"},
		{name: "mismatched key", files: tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("bbs.crt"), KeyFile: path("client.key")}, want: "load cert_file/key_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.files.Server()
			require.ErrorContains(t, err, tt.want)
			_, err = tt.files.Client()
			require.ErrorContains(t, err, tt.want)
			_, _, err = tt.files.ServerAndClient()
			require.ErrorContains(t, err, tt.want)
		})
	}
	require.False(t, tlsconfig.Files{}.Enabled())
}
