// Package target finds the BBS a droverctl invocation talks to: its gRPC address and
// the mutual-TLS files, from flags, environment variables and a .drover directory.
package target

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"drover.dev/lib/tlsconfig"
)

// DefaultAddress is the BBS gRPC address of the local dev stack.
const DefaultAddress = "127.0.0.1:8889"

// HomeDirName is the directory the dev stack keeps its state and certificates in.
const HomeDirName = ".drover"

// Environment variables droverctl reads.
const (
	EnvHome       = "DROVER_HOME"
	EnvAddress    = "DROVER_BBS_ADDRESS"
	EnvCACert     = "DROVER_CA_CERT"
	EnvClientCert = "DROVER_CLIENT_CERT"
	EnvClientKey  = "DROVER_CLIENT_KEY"
)

// Certificate file names inside <home>/certs.
const (
	CACertFile     = "ca.crt"
	ClientCertFile = "client.crt"
	ClientKeyFile  = "client.key"
)

// Settings are explicit choices (from flags); empty fields are unset.
type Settings struct {
	Address    string
	CACert     string
	ClientCert string
	ClientKey  string
}

// Target is a resolved BBS endpoint.
type Target struct {
	// Address is host:port of the BBS gRPC server.
	Address string
	// TLS names the CA, client certificate and key files.
	TLS tlsconfig.Files
	// Home is the .drover directory used for defaults; empty when none was needed or found.
	Home string
}

// Resolve picks each setting from flags first, then the environment (getenv), then
// the defaults: DefaultAddress and <home>/certs/{ca.crt,client.crt,client.key}, where
// home is found by FindHome from workDir. It fails when a certificate file is left
// unset because no .drover directory was found.
func Resolve(flags Settings, getenv func(string) string, workDir string) (Target, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	t := Target{
		Address: first(flags.Address, getenv(EnvAddress), DefaultAddress),
		TLS: tlsconfig.Files{
			CAFile:   first(flags.CACert, getenv(EnvCACert)),
			CertFile: first(flags.ClientCert, getenv(EnvClientCert)),
			KeyFile:  first(flags.ClientKey, getenv(EnvClientKey)),
		},
	}
	if t.TLS.CAFile != "" && t.TLS.CertFile != "" && t.TLS.KeyFile != "" {
		return t, nil
	}
	home, err := FindHome(getenv(EnvHome), workDir)
	if err != nil {
		return Target{}, err
	}
	t.Home = home
	certs := filepath.Join(home, "certs")
	t.TLS.CAFile = first(t.TLS.CAFile, filepath.Join(certs, CACertFile))
	t.TLS.CertFile = first(t.TLS.CertFile, filepath.Join(certs, ClientCertFile))
	t.TLS.KeyFile = first(t.TLS.KeyFile, filepath.Join(certs, ClientKeyFile))
	return t, nil
}

// ErrNoHome means no .drover directory was found and no certificates were given.
var ErrNoHome = errors.New("no " + HomeDirName + " directory found: set " + EnvHome +
	", run inside a drover checkout, or pass --ca-cert, --client-cert and --client-key")

// FindHome locates the .drover directory. When droverHome (the value of $DROVER_HOME)
// is set, it is $DROVER_HOME/.drover if that exists, else $DROVER_HOME itself.
// Otherwise it is the first .drover directory found walking up from workDir.
func FindHome(droverHome, workDir string) (string, error) {
	if droverHome != "" {
		abs, err := filepath.Abs(droverHome)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvHome, droverHome, err)
		}
		if nested := filepath.Join(abs, HomeDirName); isDir(nested) {
			return nested, nil
		}
		return abs, nil
	}
	if workDir == "" {
		return "", ErrNoHome
	}
	dir, err := filepath.Abs(workDir)
	if err != nil {
		return "", fmt.Errorf("working directory %s: %w", workDir, err)
	}
	for {
		if candidate := filepath.Join(dir, HomeDirName); isDir(candidate) {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoHome
		}
		dir = parent
	}
}

// String describes the target for messages.
func (t Target) String() string {
	return fmt.Sprintf("bbs %s (ca %s, cert %s, key %s)", t.Address, t.TLS.CAFile, t.TLS.CertFile, t.TLS.KeyFile)
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// first returns the first non-empty value.
func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
