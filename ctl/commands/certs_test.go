package commands_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/tlsconfig"
)

// testPKI is a throwaway CA with a server and a client certificate on disk.
type testPKI struct {
	dir    string // the certs directory
	server tlsconfig.Files
	client tlsconfig.Files
}

// newTestPKI writes ca.crt, client.crt, client.key, server.crt and server.key to dir.
func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	caKey, caCert := newCA(t)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caCert.Raw)
	issue := func(name string, usage x509.ExtKeyUsage) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Minute),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER)
	}
	issue("server", x509.ExtKeyUsageServerAuth)
	issue("client", x509.ExtKeyUsageClientAuth)
	files := func(name string) tlsconfig.Files {
		return tlsconfig.Files{
			CAFile:   filepath.Join(dir, "ca.crt"),
			CertFile: filepath.Join(dir, name+".crt"),
			KeyFile:  filepath.Join(dir, name+".key"),
		}
	}
	return testPKI{dir: dir, server: files("server"), client: files("client")}
}

func newCA(t *testing.T) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "drover test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return key, cert
}

func writePEM(t *testing.T, path, blockType string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600))
}
