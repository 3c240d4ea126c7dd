// Package natstest runs an embedded NATS server (github.com/nats-io/nats-server/v2) for
// tests and benchmarks: on a free or given port of 127.0.0.1, stoppable and restartable
// on the same port (to test reconnects).
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds the wait for the embedded server to accept connections.
const readyTimeout = 10 * time.Second

// Server is an embedded NATS server on a fixed port of 127.0.0.1.
type Server struct {
	port int

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
	s := &Server{port: port}
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

// Restart starts the server again on the same port (after Shutdown; a running server
// is shut down first).
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
