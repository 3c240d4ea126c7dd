package devcerts

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Names and hosts of the files WriteDevCerts writes.
const (
	CACommonName     = "drover-dev-ca"
	BBSCommonName    = "bbs"
	ClientCommonName = "drover-client"
	// MinRemaining is how long an existing certificate must still be valid to be kept.
	MinRemaining = 24 * time.Hour
)

// BBSHosts are the SANs of the dev BBS certificate.
var BBSHosts = []string{"127.0.0.1", "localhost", "bbs.service.drover.internal"}

// WriteDevCerts makes dir hold a dev CA (ca.crt, ca.key), a BBS certificate (bbs.crt,
// bbs.key for BBSHosts) and a client certificate (client.crt, client.key, CN
// drover-client). Files that exist and are still valid are left as they are.
func WriteDevCerts(dir string) error {
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		return err
	}
	if err := EnsureCert(ca, dir, "bbs", BBSCommonName, BBSHosts); err != nil {
		return err
	}
	return EnsureCert(ca, dir, "client", ClientCommonName, nil)
}

// LoadOrCreateCA loads dir/ca.crt and dir/ca.key when they form a CA valid for at least
// MinRemaining, and otherwise creates a new CA and writes those files.
func LoadOrCreateCA(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cert dir: %w", err)
	}
	certPath, keyPath := pairPaths(dir, "ca")
	if ca, err := loadCAFiles(certPath, keyPath); err == nil {
		return ca, nil
	}
	ca, err := NewCA(CACommonName)
	if err != nil {
		return nil, err
	}
	if err := writePair(certPath, keyPath, ca.certPEM, ca.keyPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// EnsureCert makes dir/<name>.crt and dir/<name>.key a certificate for commonName and
// hosts issued by ca, keeping existing files when they still verify for at least
// MinRemaining.
func EnsureCert(ca *CA, dir, name, commonName string, hosts []string) error {
	if ca == nil {
		return errors.New("ensure cert: nil CA")
	}
	certPath, keyPath := pairPaths(dir, name)
	if CheckCert(ca, certPath, keyPath, commonName, hosts) == nil {
		return nil
	}
	certPEM, keyPEM, err := ca.Issue(commonName, hosts)
	if err != nil {
		return err
	}
	return writePair(certPath, keyPath, certPEM, keyPEM)
}

// CheckCert reports why the certificate and key files are not a pair issued by ca for
// commonName and every host, valid for at least MinRemaining; nil when they are.
func CheckCert(ca *CA, certPath, keyPath, commonName string, hosts []string) error {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return err
	}
	leaf := pair.Leaf
	if leaf.Subject.CommonName != commonName {
		return fmt.Errorf("%s: common name %q, want %q", certPath, leaf.Subject.CommonName, commonName)
	}
	_, err = leaf.Verify(x509.VerifyOptions{
		Roots:       ca.Pool(),
		CurrentTime: time.Now().Add(MinRemaining),
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("%s: %w", certPath, err)
	}
	for _, host := range hosts {
		if err := leaf.VerifyHostname(host); err != nil {
			return fmt.Errorf("%s: %w", certPath, err)
		}
	}
	return nil
}

func loadCAFiles(certPath, keyPath string) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	ca, err := LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if time.Now().Add(MinRemaining).After(ca.cert.NotAfter) {
		return nil, errors.New("ca certificate expires soon")
	}
	return ca, nil
}

func pairPaths(dir, name string) (certPath, keyPath string) {
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
}

func writePair(certPath, keyPath string, certPEM, keyPEM []byte) error {
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certPath, certPEM, 0o644)
}

// writeFileAtomic writes through a temporary file and a rename, so readers never see a
// half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
