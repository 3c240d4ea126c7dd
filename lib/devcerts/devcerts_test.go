package devcerts

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/tlsconfig"
)

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

func TestIssue(t *testing.T) {
	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	require.True(t, ca.Certificate().IsCA)

	certPEM, keyPEM, err := ca.Issue("bbs", []string{"127.0.0.1", "::1", "localhost", "bbs.example"})
	require.NoError(t, err)
	_, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err, "certificate and key form a pair")

	cert := parseCert(t, certPEM)
	require.Equal(t, "bbs", cert.Subject.CommonName)
	require.ElementsMatch(t, []string{"localhost", "bbs.example"}, cert.DNSNames)
	require.Len(t, cert.IPAddresses, 2)
	require.ElementsMatch(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)

	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err = cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "bbs.example", KeyUsages: []x509.ExtKeyUsage{usage}})
		require.NoError(t, err)
	}
	require.NoError(t, cert.VerifyHostname("127.0.0.1"))

	other, err := NewCA("other-ca")
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: other.Pool()})
	require.Error(t, err, "another CA does not vouch for it")
}

func TestLoadCARoundTrip(t *testing.T) {
	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	loaded, err := LoadCA(ca.CertPEM(), ca.KeyPEM())
	require.NoError(t, err)
	require.Equal(t, ca.CertPEM(), loaded.CertPEM())

	certPEM, _, err := loaded.Issue("x", nil)
	require.NoError(t, err)
	_, err = parseCert(t, certPEM).Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	require.NoError(t, err)
}

func TestLoadCAErrors(t *testing.T) {
	ca, err := NewCA("a")
	require.NoError(t, err)
	other, err := NewCA("b")
	require.NoError(t, err)
	leafPEM, leafKey, err := ca.Issue("leaf", nil)
	require.NoError(t, err)

	tests := []struct {
		name          string
		certPEM, keyP []byte
	}{
		{name: "empty", certPEM: nil, keyP: nil},
		{name: "garbage key", certPEM: ca.CertPEM(), keyP: []byte("nope")},
		{name: "mismatched key", certPEM: ca.CertPEM(), keyP: other.KeyPEM()},
		{name: "leaf is not a CA", certPEM: leafPEM, keyP: leafKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadCA(tt.certPEM, tt.keyP)
			require.Error(t, err)
		})
	}
	var nilCA *CA
	_, _, err = nilCA.Issue("x", nil)
	require.Error(t, err)
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{"ca.crt", "ca.key", "bbs.crt", "bbs.key", "client.crt", "client.key"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		files[name] = data
	}
	return files
}

func TestWriteDevCertsKeepsValidFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	require.NoError(t, WriteDevCerts(dir))
	first := readAll(t, dir)

	info, err := os.Stat(filepath.Join(dir, "bbs.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "keys are private")

	require.NoError(t, WriteDevCerts(dir))
	require.Equal(t, first, readAll(t, dir), "valid files are left alone")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bbs.crt"), []byte("broken"), 0o644))
	require.NoError(t, WriteDevCerts(dir))
	third := readAll(t, dir)
	require.NotEqual(t, first["bbs.crt"], third["bbs.crt"], "a broken certificate is reissued")
	require.Equal(t, first["ca.crt"], third["ca.crt"])
	require.Equal(t, first["client.crt"], third["client.crt"])

	require.NoError(t, os.Remove(filepath.Join(dir, "ca.key")))
	require.NoError(t, WriteDevCerts(dir))
	fourth := readAll(t, dir)
	require.NotEqual(t, third["ca.crt"], fourth["ca.crt"], "a CA without its key is replaced")
	require.NotEqual(t, third["client.crt"], fourth["client.crt"], "leaves of the old CA are reissued")
}

func TestEnsureCertReissuesForNewHosts(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir)
	require.NoError(t, err)
	require.NoError(t, EnsureCert(ca, dir, "rep", "cell-1", []string{"127.0.0.1"}))
	certPath, keyPath := filepath.Join(dir, "rep.crt"), filepath.Join(dir, "rep.key")
	require.NoError(t, CheckCert(ca, certPath, keyPath, "cell-1", []string{"127.0.0.1"}))
	require.Error(t, CheckCert(ca, certPath, keyPath, "cell-2", []string{"127.0.0.1"}))
	require.Error(t, CheckCert(ca, certPath, keyPath, "cell-1", []string{"10.0.0.1"}))

	require.NoError(t, EnsureCert(ca, dir, "rep", "cell-1", []string{"127.0.0.1", "10.0.0.1"}))
	require.NoError(t, CheckCert(ca, certPath, keyPath, "cell-1", []string{"127.0.0.1", "10.0.0.1"}))
	require.Error(t, EnsureCert(nil, dir, "rep", "cell-1", nil))
}

// TestDevCertsWorkForMutualTLS runs a TLS 1.3 handshake with the written files through
// lib/tlsconfig, the way every drover server and client loads them.
func TestDevCertsWorkForMutualTLS(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteDevCerts(dir))
	path := func(name string) string { return filepath.Join(dir, name) }

	serverTLS, err := tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("bbs.crt"), KeyFile: path("bbs.key")}.Server()
	require.NoError(t, err)
	clientTLS, err := tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("client.crt"), KeyFile: path("client.key")}.Client()
	require.NoError(t, err)

	lis, err := tls.Listen("tcp", "127.0.0.1:0", serverTLS)
	require.NoError(t, err)
	defer lis.Close()
	peer := make(chan string, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			peer <- err.Error()
			return
		}
		defer conn.Close()
		tlsConn := conn.(*tls.Conn)
		if err := tlsConn.Handshake(); err != nil {
			peer <- err.Error()
			return
		}
		peer <- tlsConn.ConnectionState().PeerCertificates[0].Subject.CommonName
		_, _ = io.WriteString(conn, "hi")
	}()

	conn, err := tls.Dial("tcp", lis.Addr().String(), clientTLS)
	require.NoError(t, err)
	defer conn.Close()
	require.Equal(t, ClientCommonName, <-peer)
	require.Equal(t, "localhost", conn.ConnectionState().PeerCertificates[0].DNSNames[0])
	require.Equal(t, uint16(tls.VersionTLS13), conn.ConnectionState().Version)
}
