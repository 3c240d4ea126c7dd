package devstack

import (
	"crypto/tls"
	"path/filepath"

	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

// Certs is a directory written by devcerts.WriteDevCerts.
type Certs struct {
	Dir string `json:"dir"`
}

// Ensure writes the CA, BBS and client certificates that are missing or expiring.
func (c Certs) Ensure() error { return devcerts.WriteDevCerts(c.Dir) }

// CAFile is the CA certificate every drover process trusts.
func (c Certs) CAFile() string { return filepath.Join(c.Dir, "ca.crt") }

// Server is the BBS's certificate and key (valid for 127.0.0.1 and localhost).
func (c Certs) Server() tlsconfig.Files { return c.pair("bbs") }

// Client is the certificate and key a client presents to the BBS.
func (c Certs) Client() tlsconfig.Files { return c.pair("client") }

// ClientTLS is the client side mTLS configuration.
func (c Certs) ClientTLS() (*tls.Config, error) { return c.Client().Client() }

func (c Certs) pair(name string) tlsconfig.Files {
	return tlsconfig.Files{
		CAFile:   c.CAFile(),
		CertFile: filepath.Join(c.Dir, name+".crt"),
		KeyFile:  filepath.Join(c.Dir, name+".key"),
	}
}
