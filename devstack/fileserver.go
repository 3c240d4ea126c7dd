package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"drover.dev/fileserver/bundle"
	fsconfig "drover.dev/fileserver/config"
)

// FileserverBinary is the fileserver's program.
var FileserverBinary = Binary{Name: "fileserver", Package: "./fileserver/cmd/fileserver"}

// FileserverPorts are the fileserver's HTTP and debug ports.
type FileserverPorts struct{ HTTP, Debug int }

// DefaultFileserverPorts are the dev stack's fileserver ports.
var DefaultFileserverPorts = FileserverPorts{HTTP: 8080, Debug: 17005}

// ExampleAppStatic is the static path of the example app bits (examples/static-site as a
// tgz) that the LRP API's seed example downloads: /v1/static/app.tgz.
const ExampleAppStatic = "app.tgz"

// SigningKeyFile is where, under a stack's home, the fileserver's URL-signing key lives
// (droverctl push reads it there).
const SigningKeyFile = "fileserver/signing.key"

// Fileserver is the stack's blob server: a Service with its configuration.
type Fileserver struct {
	Service
	Config fsconfig.Config `json:"config"`
	// BundleSources maps a static path ("lifecycle/lifecycle.tgz") to the directory
	// packed into it at every start.
	BundleSources map[string]string `json:"bundle_sources"`
}

// URL is the fileserver's base URL.
func (f *Fileserver) URL() string { return "http://" + f.Config.ServerAddress }

// DebugURL is the base URL of the fileserver's debug server (/metrics).
func (f *Fileserver) DebugURL() string { return "http://" + f.Config.DebugAddress }

// Start packs the bundles (the lifecycle) into the static directory, writes the configuration,
// starts the fileserver and waits until it is Healthy.
func (f *Fileserver) Start(ctx context.Context) error {
	for static, src := range f.BundleSources {
		dst := filepath.Join(f.Config.StaticDirectory, filepath.FromSlash(static))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("fileserver bundles: %w", err)
		}
		if err := bundle.WriteFile(src, dst); err != nil {
			return fmt.Errorf("fileserver bundle %s: %w", static, err)
		}
	}
	return f.start(ctx, f.Config, ComponentStartTimeout, f.Healthy)
}

// Healthy reports whether the fileserver answers /healthz.
func (f *Fileserver) Healthy(ctx context.Context) error {
	return checkHTTP(ctx, f.URL()+"/healthz")
}

// AddFileserver describes the stack's fileserver on ports, keeping its files under
// Home/fileserver and serving the example app bits (and, with a stager, the lifecycle).
func (s *Stack) AddFileserver(ports FileserverPorts, detached bool) *Fileserver {
	f := &Fileserver{BundleSources: map[string]string{}}
	s.describe(&f.Service, "fileserver", FileserverBinary, detached)
	cfg := fsconfig.Default()
	cfg.ServerAddress = "127.0.0.1:" + strconv.Itoa(ports.HTTP)
	cfg.DebugAddress = "127.0.0.1:" + strconv.Itoa(ports.Debug)
	cfg.StaticDirectory = filepath.Join(f.Dir, "static")
	cfg.BlobDirectory = filepath.Join(f.Dir, "blobs")
	cfg.SigningKeyFile = filepath.Join(s.Home, filepath.FromSlash(SigningKeyFile))
	f.Config = cfg
	f.BundleSources[ExampleAppStatic] = filepath.Join(s.Root, "examples", "static-site")
	s.Fileserver = f
	return f
}

// ensureSigningKey creates the fileserver's signing key (32 random bytes, hex) unless
// it exists; a stack keeps its key across restarts, so signed URLs stay valid.
func ensureSigningKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(hex.EncodeToString(key)+"\n"), 0o600)
}
