package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/devstack/natsuser"
	libconfig "drover.dev/lib/config"
)

// infraProbeTimeout bounds each health probe of Postgres, containerd and NATS.
const infraProbeTimeout = 5 * time.Second

// infraStatus reports the infrastructure under the stack: Postgres (the private one of
// Home, or the database it was given), the containerd of its cells and its NATS, each
// with the pid of its pid file (0 for a database or server the stack did not start) and
// a health probe. A test stack's embedded NATS is not listed.
func (s *Stack) infraStatus(ctx context.Context) []ServiceStatus {
	var out []ServiceStatus
	if s.DatabaseURL != "" {
		st := ServiceStatus{Name: "postgres", Addresses: databaseAddress(s.DatabaseURL)}
		if s.OwnPostgres {
			st.Pid = postmasterPid(filepath.Join(s.Home, "postgres", "data", "postmaster.pid"))
			st.Addresses += "  data " + filepath.Join(s.Home, "postgres", "data")
		} else {
			st.Addresses += "  (not started by the stack)"
		}
		st.Unhealthy = probe(ctx, s.OwnPostgres, st.Pid, func(ctx context.Context) error { return s.pingDatabase(ctx) })
		out = append(out, st)
	}
	if c := s.Containerd; c.Socket != "" {
		st := ServiceStatus{Name: "containerd", Addresses: "socket " + c.Socket}
		if c.Own {
			st.Pid = pidFromFile(filepath.Join(s.Home, "containerd", "containerd.pid"), "containerd")
		} else {
			st.Addresses += "  (not started by the stack: down leaves it running)"
		}
		st.Unhealthy = probe(ctx, c.Own, st.Pid, c.Answers)
		out = append(out, st)
	}
	if n := s.NATS; n != nil && n.Embedded == nil {
		st := ServiceStatus{Name: "nats", Addresses: n.URL}
		if n.Own {
			st.Pid = pidFromFile(filepath.Join(s.Home, "nats", "nats-server.pid"), "nats-server")
		}
		st.Unhealthy = probe(ctx, n.Own, st.Pid, n.ping)
		out = append(out, st)
	}
	return out
}

// probe runs check with infraProbeTimeout; a server the stack owns must also have a
// live pid.
func probe(ctx context.Context, own bool, pid int, check func(context.Context) error) error {
	if own && pid == 0 {
		return errors.New("not running")
	}
	ctx, cancel := context.WithTimeout(ctx, infraProbeTimeout)
	defer cancel()
	return check(ctx)
}

// databaseAddress is host:port of a database URL, for people.
func databaseAddress(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || u.Host == "" {
		return "database"
	}
	return u.Host
}

// pingDatabase connects to the stack's database with its password and pings it.
func (s *Stack) pingDatabase(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(s.DatabaseURL)
	if err != nil {
		return err
	}
	if s.DatabasePasswordFile != "" {
		if cfg.Password, err = libconfig.ReadSecretFile(s.DatabasePasswordFile); err != nil {
			return err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// ping connects to NATS as the router user and closes the connection.
func (n *NATS) ping(ctx context.Context) error {
	done := make(chan error, 1)
	go func() {
		conn, err := n.Connect(natsuser.Router)
		if err == nil {
			conn.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postmasterPid is the live postmaster of a postmaster.pid file (its first line), or 0.
func postmasterPid(path string) int {
	return pidFromFile(path, "postgres")
}

// pidFromFile reads the pid on the first line of path and returns it if that process
// lives and its command line names program; 0 otherwise.
func pidFromFile(path, program string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), program) {
		return 0
	}
	return pid
}
