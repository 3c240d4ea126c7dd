package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// parseUnit parses a systemd unit file into "Section.Key" → values.
func parseUnit(path string) (unitFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("%s: %q is not KEY=VALUE", path, line)
			}
			key := section + "." + strings.TrimSpace(k)
			u[key] = append(u[key], strings.TrimSpace(v))
		}
	}
	return u, sc.Err()
}

// last is the last value of key ("" when unset), as systemd takes a repeated setting.
func (u unitFile) last(key string) string {
	if v := u[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// emulatedUnit is a systemd service the test runs as systemd would: its ExecStart as its
// User and Group in its host's network namespace, with its StateDirectory and
// RuntimeDirectory made first, restarted after RestartSec when it exits non-zero and
// Restart=on-failure.
type emulatedUnit struct {
	name    string
	host    *depHost
	argv    []string
	uid     int
	gid     int
	restart bool
	delay   time.Duration
	logPath string

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	restarts int
	done     chan struct{}
}

// start spawns the unit and supervises it until stop.
func (u *emulatedUnit) start() error {
	if err := u.spawn(); err != nil {
		return err
	}
	u.done = make(chan struct{})
	go u.supervise()
	return nil
}

func (u *emulatedUnit) spawn() error {
	logFile, err := os.OpenFile(u.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := []string{"--net=" + u.host.NetnsPath(), "--"}
	if u.uid != 0 || u.gid != 0 {
		args = append(args, "setpriv", "--reuid="+strconv.Itoa(u.uid), "--regid="+strconv.Itoa(u.gid), "--init-groups", "--")
	}
	cmd := exec.Command("nsenter", append(args, u.argv...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", u.name, err)
	}
	u.mu.Lock()
	u.cmd = cmd
	u.mu.Unlock()
	return nil
}

func (u *emulatedUnit) supervise() {
	defer close(u.done)
	for {
		u.mu.Lock()
		cmd := u.cmd
		u.mu.Unlock()
		err := cmd.Wait()
		u.mu.Lock()
		stopping := u.stopping
		u.mu.Unlock()
		if stopping || err == nil || !u.restart {
			return
		}
		time.Sleep(u.delay)
		u.mu.Lock()
		if u.stopping {
			u.mu.Unlock()
			return
		}
		u.restarts++
		u.mu.Unlock()
		if err := u.spawn(); err != nil {
			return
		}
	}
}

// Restarts says how many times the unit was restarted after failing.
func (u *emulatedUnit) Restarts() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.restarts
}

// stop sends SIGTERM, waits up to grace, then kills the process group.
func (u *emulatedUnit) stop(grace time.Duration) {
	u.mu.Lock()
	u.stopping = true
	cmd := u.cmd
	u.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-u.done
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever it left in its group
}

// unitDirs makes a unit's StateDirectory (under /var/lib) and RuntimeDirectory (under
// /run) on its host, owned by its user, with their modes, as systemd does before start.
func unitDirs(u unitFile, sub *strings.Replacer, uid, gid int) error {
	for _, d := range []struct{ key, base string }{{"StateDirectory", "/var/lib/"}, {"RuntimeDirectory", "/run/"}} {
		mode := os.FileMode(0o755)
		if m := u.last("Service." + d.key + "Mode"); m != "" {
			v, err := strconv.ParseUint(m, 8, 32)
			if err != nil {
				return fmt.Errorf("%sMode %q: %w", d.key, m, err)
			}
			mode = os.FileMode(v)
		}
		for _, rel := range strings.Fields(u.last("Service." + d.key)) {
			dir := sub.Replace(d.base + rel)
			if !strings.HasPrefix(dir, "/tmp/") && !strings.Contains(dir, "drover-deployment-") {
				return fmt.Errorf("%s %s is not substituted into the test's directory", d.key, dir)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := os.Chown(dir, uid, gid); err != nil {
				return err
			}
			if err := os.Chmod(dir, mode); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookupIDs resolves a unit's User and Group (root when unset).
func lookupIDs(u unitFile) (uid, gid int, err error) {
	name, group := u.last("Service.User"), u.last("Service.Group")
	if name == "" {
		name = "root"
	}
	usr, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	if group == "" {
		group = name
	}
	grp, err := user.LookupGroup(group)
	if err != nil {
		return 0, 0, err
	}
	uid, _ = strconv.Atoi(usr.Uid)
	gid, _ = strconv.Atoi(grp.Gid)
	return uid, gid, nil
}

// systemctlShim is the `systemctl` the doc's blocks find first in PATH: it asks the
// test, over a unix socket (reachable from every network namespace), to carry the
// command out on the block's host, and fails when the test does.
const systemctlShim = `#!/bin/sh
exec curl -sS --fail-with-body --unix-socket %s -G --data-urlencode "host=%s" --data-urlencode "args=$*" http://systemctl/
`

// serveSystemctl answers the shims on a unix socket at path with handle's result.
func serveSystemctl(path string, handle func(host string, args []string) error) (stop func(), err error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := handle(r.URL.Query().Get("host"), strings.Fields(r.URL.Query().Get("args"))); err != nil {
			http.Error(w, "systemctl (the test's): "+err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(nil)
	})}
	go func() { _ = srv.Serve(l) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// unitNames are the units of a systemctl command line, options dropped, ".service"
// added where missing.
func unitNames(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if !strings.Contains(a, ".") {
			a += ".service"
		}
		out = append(out, a)
	}
	return out
}

// errUnknownVerb is a systemctl command the emulation does not carry out.
var errUnknownVerb = errors.New("unsupported systemctl command")
