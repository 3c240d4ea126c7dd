// Package tlsconfig builds the mutual-TLS configurations every drover link uses:
// TLS 1.3, a private CA, and client certificates required and verified by servers.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files names a PEM CA bundle and a certificate/key pair.
type Files struct {
	CAFile   string `json:"ca_file"`
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
}

// Enabled reports whether any file is configured.
func (f Files) Enabled() bool { return f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" }

// Validate reports a missing file name.
func (f Files) Validate() error {
	switch {
	case f.CAFile == "":
		return errors.New("ca_file is required")
	case f.CertFile == "":
		return errors.New("cert_file is required")
	case f.KeyFile == "":
		return errors.New("key_file is required")
	}
	return nil
}

func (f Files) load() (*x509.CertPool, tls.Certificate, error) {
	if err := f.Validate(); err != nil {
		return nil, tls.Certificate{}, err
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("read ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, tls.Certificate{}, fmt.Errorf("ca_file %s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("load cert_file/key_file: %w", err)
	}
	return pool, cert, nil
}

// Server returns a configuration that requires and verifies client certificates.
func (f Files) Server() (*tls.Config, error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	return serverConfig(pool, cert), nil
}

// Client returns a configuration that presents the certificate and verifies the server.
func (f Files) Client() (*tls.Config, error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	return clientConfig(pool, cert), nil
}

// ServerAndClient reads the files once and returns both configurations: a process
// serves with its certificate and presents the same one to the services it calls.
func (f Files) ServerAndClient() (server, client *tls.Config, err error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, nil, err
	}
	return serverConfig(pool, cert), clientConfig(pool, cert), nil
}

func serverConfig(pool *x509.CertPool, cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

func clientConfig(pool *x509.CertPool, cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
	}
}

// OutboundHTTPS returns a configuration for HTTPS requests to URLs that clients name (a
// task's completion_callback_url): it presents the certificate, so that a drover
// receiver (the stager) can tell who calls, and trusts the private CA as well as the
// system's roots, so that other receivers keep working.
func (f Files) OutboundHTTPS() (*tls.Config, error) {
	_, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read ca_file: %w", err)
	}
	roots.AppendCertsFromPEM(pem)
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: roots}, nil
}
