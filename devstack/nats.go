package devstack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"drover.dev/devstack/natsuser"
	libconfig "drover.dev/lib/config"
)

// DefaultNATSPort is the dev stack's NATS port (scripts/nats.sh; DROVER_NATS_PORT
// overrides it there).
const DefaultNATSPort = 4222

// NATS is the message bus between the route-emitter and the routers: the private
// nats-server of the dev stack (scripts/nats.sh) or, in a test stack, an embedded
// server on a free port (devstacktest). Both refuse clients without credentials and
// know the users natsuser.All, each with a password of its own.
type NATS struct {
	// URL is nats://host:port.
	URL string `json:"url"`
	// Own is true when the stack started it through scripts/nats.sh and stops it on Down.
	Own bool `json:"own"`
	// PasswordFiles maps each user to the file with its password (0600): the dev
	// stack's are written by scripts/nats.sh, a test stack's by devstacktest.
	PasswordFiles map[string]string `json:"password_files"`
	// Embedded is a test stack's in-process server, nil for the dev stack's nats-server.
	Embedded EmbeddedNATS `json:"-"`
}

// EmbeddedNATS is a NATS server running in the test process (natstest.Server), which a
// test stack uses instead of scripts/nats.sh.
type EmbeddedNATS interface {
	// Shutdown stops the server; clients see the connection drop.
	Shutdown()
	// Restart starts it again on the same port with the same users.
	Restart() error
}

// NATSPasswordFile is where the password of user is kept under home (scripts/nats.sh).
func NATSPasswordFile(home, user string) string {
	return filepath.Join(home, "nats", user+".password")
}

// Password reads the password of user.
func (n *NATS) Password(user string) (string, error) {
	file, ok := n.PasswordFiles[user]
	if !ok {
		return "", fmt.Errorf("nats: no password for user %q", user)
	}
	return libconfig.ReadSecretFile(file)
}

// Connect connects to NATS as user (a test that listens to the routes connects as
// natsuser.Router); options add to the credentials.
func (n *NATS) Connect(user string, options ...nats.Option) (*nats.Conn, error) {
	password, err := n.Password(user)
	if err != nil {
		return nil, err
	}
	return nats.Connect(n.URL, append([]nats.Option{nats.UserInfo(user, password)}, options...)...)
}

// StartNATS starts the private nats-server of home through scripts/nats.sh (a running
// one is reused).
func StartNATS(ctx context.Context, root, home string) (NATS, error) {
	out, err := natsScript(ctx, root, home, "start")
	if err != nil {
		return NATS{}, err
	}
	fields := strings.Fields(out)
	if len(fields) == 0 {
		return NATS{}, fmt.Errorf("nats.sh start printed no URL")
	}
	files := map[string]string{}
	for _, u := range natsuser.All {
		files[u] = NATSPasswordFile(home, u)
	}
	return NATS{URL: fields[len(fields)-1], Own: true, PasswordFiles: files}, nil
}

// StopNATS stops the private nats-server of home; it is not an error if none runs.
func StopNATS(ctx context.Context, root, home string) error {
	_, err := natsScript(ctx, root, home, "stop")
	return err
}

// Shutdown stops a test stack's embedded server (clients see the connection drop).
// It does nothing for the dev stack's nats-server (Down stops that).
func (n *NATS) Shutdown() {
	if n.Embedded != nil {
		n.Embedded.Shutdown()
	}
}

// Restart stops NATS and starts it again on the same port: the embedded server of a
// test stack, or the dev stack's nats-server.
func (n *NATS) Restart(ctx context.Context, s *Stack) error {
	if n.Embedded != nil {
		return n.Embedded.Restart()
	}
	if err := StopNATS(ctx, s.Root, s.Home); err != nil {
		return err
	}
	_, err := StartNATS(ctx, s.Root, s.Home)
	return err
}

func natsScript(ctx context.Context, root, home, verb string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "nats.sh"), verb)
	cmd.Env = append(os.Environ(), "DROVER_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nats.sh %s: %w: %s", verb, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
