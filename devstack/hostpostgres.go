package devstack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// HostPostgresHome is the DROVER_HOME that scripts/postgres.sh gets for the private
// Postgres of a multi-host stack in home: a cluster of its own (home/hosts/postgres),
// so that the single-host one of home (which tests may use on 127.0.0.1) is left alone.
func HostPostgresHome(home string) string { return filepath.Join(home, "hosts") }

// hostPostgresConf is the file, in the data directory, that makes Postgres listen on the
// control host's address; postgresql.conf includes it.
const hostPostgresConf = "drover-hosts.conf"

// StartHostPostgres starts the private Postgres of a multi-host stack on the control host
// of n: scripts/postgres.sh (DROVER_HOME=HostPostgresHome(home)) run in the control
// host's netns, then the cluster made to listen on the control host's address only and
// to accept the drover role's password from the test network, and restarted there. It
// returns the database URL (on the control address) and the password file.
func StartHostPostgres(ctx context.Context, root, home string, n *HostNetwork) (dbURL, passwordFile string, err error) {
	control := n.Host(HostControl)
	pgHome := HostPostgresHome(home)
	if err := os.MkdirAll(pgHome, 0o755); err != nil {
		return "", "", fmt.Errorf("host postgres: %w", err)
	}
	data := filepath.Join(pgHome, "postgres", "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		// An existing cluster starts on this network's address (an older one's is gone).
		if err := writeHostPostgresConf(data, control.IP); err != nil {
			return "", "", err
		}
	}
	cmd := exec.CommandContext(ctx, nsenterPath, "--net="+control.NetnsPath(), "--", filepath.Join(root, "scripts", "postgres.sh"), "start")
	cmd.Env = append(os.Environ(), "DROVER_HOME="+pgHome)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("host postgres: postgres.sh start: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	fields := strings.Fields(stdout.String())
	if len(fields) == 0 {
		return "", "", fmt.Errorf("host postgres: postgres.sh start printed no URL")
	}
	u, err := url.Parse(fields[len(fields)-1])
	if err != nil {
		return "", "", fmt.Errorf("host postgres: %w", err)
	}
	if err := writeHostPostgresConf(data, control.IP); err != nil {
		return "", "", err
	}
	if err := allowHostNetwork(filepath.Join(data, "pg_hba.conf"), n.Subnet); err != nil {
		return "", "", err
	}
	bin, err := postgresBin()
	if err != nil {
		return "", "", err
	}
	restart := exec.CommandContext(ctx, nsenterPath, "--net="+control.NetnsPath(), "--",
		"runuser", "-u", "postgres", "--", filepath.Join(bin, "pg_ctl"), "-D", data,
		"-l", filepath.Join(pgHome, "postgres", "postgres.log"), "-w", "-t", "60", "-m", "fast", "restart")
	if out, err := restart.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("host postgres: restart on %s: %w: %s", control.IP, err, strings.TrimSpace(string(out)))
	}
	u.Host = net.JoinHostPort(control.IP, u.Port())
	return u.String(), PostgresPasswordFile(pgHome), nil
}

// StopHostPostgres stops the private Postgres of the multi-host stack in home.
func StopHostPostgres(ctx context.Context, root, home string) error {
	return StopPostgres(ctx, root, HostPostgresHome(home))
}

// writeHostPostgresConf makes the cluster in data listen on ip only (hostPostgresConf,
// included last by postgresql.conf).
func writeHostPostgresConf(data, ip string) error {
	conf := fmt.Sprintf("# Written by devstack: a multi-host stack's Postgres listens on the control host.\nlisten_addresses = '%s'\n", ip)
	if err := os.WriteFile(filepath.Join(data, hostPostgresConf), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("host postgres: %w", err)
	}
	return appendLineOnce(filepath.Join(data, "postgresql.conf"), fmt.Sprintf("include_if_exists = '%s'", hostPostgresConf))
}

// allowHostNetwork lets the test network's hosts log in with a password (pg_hba.conf;
// scripts/postgres.sh rewrites the file at its next start, and this adds it again).
func allowHostNetwork(hba, subnet string) error {
	return appendLineOnce(hba, fmt.Sprintf("host    all       all   %s  scram-sha-256", subnet))
}

// appendLineOnce appends line to the file unless a line of it already is line.
func appendLineOnce(path, line string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("host postgres: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if l == line {
			return nil
		}
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		line = "\n" + line
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("host postgres: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		return fmt.Errorf("host postgres: %w", err)
	}
	return nil
}

// postgresBin is the newest installed PostgreSQL's bin directory (as scripts/postgres.sh
// picks it).
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		return "", fmt.Errorf("host postgres: postgresql is not installed (run scripts/install-deps.sh)")
	}
	sort.Slice(dirs, func(i, j int) bool { return versionLess(dirs[i], dirs[j]) })
	return dirs[len(dirs)-1], nil
}

// versionLess orders /usr/lib/postgresql/<major>/bin paths by major version.
func versionLess(a, b string) bool {
	va, vb := filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b))
	if len(va) != len(vb) {
		return len(va) < len(vb)
	}
	return va < vb
}
