// Package natstest runs an embedded NATS server (github.com/nats-io/nats-server/v2) for
// tests and benchmarks: on a free or given port of 127.0.0.1, stoppable and restartable
// on the same port (to test reconnects). Like the dev stack's nats-server
// (scripts/nats.sh), it refuses unauthenticated clients and knows the users natsuser.All
// with random passwords, each allowed only its side of the gorouter protocol
// (Permissions).
package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"drover.dev/devstack/natsuser"
)

// readyTimeout bounds the wait for the embedded server to accept connections.
const readyTimeout = 10 * time.Second

// Permissions is what user may publish and subscribe to (nil for an unknown user): the
// route-emitter publishes router.register, router.unregister and router.greet and hears
// router.start and the greet replies on its inbox; a router hears router.* (gorouter
// subscribes to that) and publishes router.start and replies to greets. Keep
// scripts/nats.sh alike.
func Permissions(user string) *server.Permissions {
	switch user {
	case natsuser.RouteEmitter:
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"router.register", "router.unregister", "router.greet"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"router.start", "_INBOX.>"}},
		}
	case natsuser.Router:
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"router.start"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"router.*"}},
			Response:  &server.ResponsePermission{MaxMsgs: responseAllowance, Expires: time.Minute},
		}
	}
	return nil
}

// responseAllowance is how many messages a router may publish to the reply subject of a
// greet: 2, because the server counts each delivery of the greet against it, and a
// router that subscribes to both router.* and router.greet (the stand-in router, like
// gorouter) receives it twice.
const responseAllowance = 2

// Server is an embedded NATS server on a fixed port of 127.0.0.1.
type Server struct {
	port      int
	passwords map[string]string // user → password

	mu  sync.Mutex
	srv *server.Server
}

// Start runs a server on port (0: a free one) and returns once it accepts connections.
func Start(port int) (*Server, error) {
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("nats: free port: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	s := &Server{port: port, passwords: map[string]string{}}
	for _, u := range natsuser.All {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("nats: password: %w", err)
		}
		s.passwords[u] = hex.EncodeToString(b)
	}
	if err := s.Restart(); err != nil {
		return nil, err
	}
	return s, nil
}

// New starts a server on a free port, shut down when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// URL is nats://127.0.0.1:PORT.
func (s *Server) URL() string { return "nats://" + s.Address() }

// Address is 127.0.0.1:PORT.
func (s *Server) Address() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Password is the password of user (one of natsuser.All), "" for an unknown user.
func (s *Server) Password(user string) string { return s.passwords[user] }

// Connect connects as user with its password (options add to the defaults).
func (s *Server) Connect(user string, options ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(s.URL(), append([]nats.Option{nats.UserInfo(user, s.Password(user))}, options...)...)
}

// Running reports whether the server runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// Shutdown stops the server (clients see the connection drop); it can Restart.
func (s *Server) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// Restart starts the server again on the same port, with the same users and passwords
// (after Shutdown; a running server is shut down first).
func (s *Server) Restart() error {
	s.Shutdown()
	s.mu.Lock()
	defer s.mu.Unlock()
	opts := &server.Options{
		Host:           "127.0.0.1",
		Port:           s.port,
		NoLog:          true,
		NoSigs:         true,
		MaxPayload:     1 << 20,
		MaxPending:     256 << 20,
		WriteDeadline:  10 * time.Second,
		MaxControlLine: 4096,
	}
	for _, u := range natsuser.All {
		opts.Users = append(opts.Users, &server.User{Username: u, Password: s.passwords[u], Permissions: Permissions(u)})
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		return fmt.Errorf("nats: the embedded server on %s did not become ready within %s", s.Address(), readyTimeout)
	}
	s.srv = srv
	return nil
}
