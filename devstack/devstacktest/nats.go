package devstacktest

import (
	"fmt"
	"os"
	"path/filepath"

	"drover.dev/devstack"
	"drover.dev/devstack/natstest"
	"drover.dev/devstack/natsuser"
)

// startNATS runs an embedded server (natstest) on a free port for a test stack and
// writes its users' passwords where scripts/nats.sh would, under home.
func startNATS(home string) (*devstack.NATS, error) {
	if err := os.MkdirAll(filepath.Join(home, "nats"), 0o700); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	srv, err := natstest.Start(0)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, u := range natsuser.All {
		files[u] = devstack.NATSPasswordFile(home, u)
		if err := os.WriteFile(files[u], []byte(srv.Password(u)), 0o600); err != nil {
			srv.Shutdown()
			return nil, fmt.Errorf("nats: %w", err)
		}
	}
	return &devstack.NATS{URL: srv.URL(), PasswordFiles: files, Embedded: srv}, nil
}
