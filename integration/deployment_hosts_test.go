package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"drover.dev/devstack"
)

// depHost is one host of the deployment: a test host of the network (nil Netns: the
// admin machine, the test's own namespace) and the directory that stands for its
// filesystem's drover paths.
type depHost struct {
	devstack.Host
	// Dir holds the host's /etc/drover, /var/lib/drover, /run/drover, /usr/local/bin,
	// /etc/systemd/system and /etc/nats*.
	Dir string
}

// deployment is TestDeployment's state: the test network, the substitution table, the
// units it runs for the blocks' systemctl, and what it must clean up.
type deployment struct {
	t          *testing.T
	root       string // the repository (the admin's checkout)
	work       string // everything the test writes
	deployDir  string // what /srv/drover-deploy stands for
	net        *devstack.HostNetwork
	hosts      map[string]*depHost
	containerd devstack.Containerd
	// nsPrefix starts the containerd namespace of each cell (the cells share the
	// test's containerd).
	nsPrefix    string
	pgData      string
	pgBin       string
	createdUser bool

	mu    sync.Mutex
	units map[string]*emulatedUnit // host/unit → unit
	order []*emulatedUnit
}

// addressPairs are the substitutions of the page's addresses by the test network's.
func (d *deployment) addressPairs() []string {
	ip := func(name string) string { return d.hosts[name].IP }
	pairs := []string{
		"bbs.service.drover.internal", ip(devstack.HostControl),
		"10.0.0.10", ip(devstack.HostControl),
		"10.0.0.11", ip(devstack.HostControl),
		"10.0.0.2", ip(devstack.HostRouter),
		"10.0.0.0/24", d.net.Subnet,
		"0.0.0.0/0", d.net.Subnet,
		"10.0.2.10", ip(devstack.HostRouter),
	}
	for i := 1; i <= deploymentCells; i++ {
		pairs = append(pairs, fmt.Sprintf("10.0.1.%d", i), ip(devstack.CellHostName(i)))
	}
	return pairs
}

// pathPairs are the substitutions of a host's paths by its directory (and of the
// containerd socket by the test's).
func (d *deployment) pathPairs(h *depHost) []string {
	pairs := []string{"/srv/drover-deploy", d.deployDir}
	if h == nil {
		return pairs
	}
	if h.Name == devstack.HostControl {
		pairs = append(pairs, "/etc/postgresql/15/main", d.pgData)
	}
	for _, p := range []string{"/etc/drover", "/var/lib/drover", "/run/drover", "/usr/local/bin", "/etc/systemd/system", "/etc/nats"} {
		pairs = append(pairs, p, filepath.Join(h.Dir, p))
	}
	return append(pairs, "/run/containerd/containerd.sock", d.containerd.Socket)
}

// replacer substitutes paths and addresses for host h (nil: the admin machine).
func (d *deployment) replacer(h *depHost) *strings.Replacer {
	return strings.NewReplacer(append(d.pathPairs(h), d.addressPairs()...)...)
}

// logTable prints the substitution table.
func (d *deployment) logTable() {
	var b strings.Builder
	b.WriteString("substitutions (docs/deployment.md → this test):\n")
	pairs := d.addressPairs()
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "  %-30s → %s\n", pairs[i], pairs[i+1])
	}
	names := make([]string, 0, len(d.hosts))
	for n := range d.hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := d.hosts[n]
		pp := d.pathPairs(h)
		fmt.Fprintf(&b, "  on %s (%s, netns %s):\n", n, h.IP, h.Netns)
		for i := 0; i < len(pp); i += 2 {
			fmt.Fprintf(&b, "    %-30s → %s\n", pp[i], pp[i+1])
		}
		if strings.HasPrefix(n, "cell-") {
			fmt.Fprintf(&b, "    %-30s → %s\n", `"containerd_namespace": "drover"`, d.cellNamespace(n))
			fmt.Fprintf(&b, "    %-30s → CELL=%s IP=%s\n", "CELL=cell-1 IP=10.0.1.1", n, h.IP)
		}
	}
	b.WriteString("  systemctl                      → the test's (runs each unit's ExecStart as its User/Group in the host's netns)\n")
	b.WriteString("  postgresql@15-main             → a fresh cluster (initdb) in " + d.pgData + "\n")
	b.WriteString("  gorouter                       → devstack/cmd/standin-router on the router host's port 80\n")
	d.t.Log(b.String())
}

// cellNamespace is the containerd namespace of the cell called name.
func (d *deployment) cellNamespace(name string) string { return d.nsPrefix + name }

// runBlock runs a block of the page on host h (nil: the admin machine, from the
// repository) with the substitutions, through bash -e -o pipefail, and fails the test
// when it fails.
func (d *deployment) runBlock(b docBlock, h *depHost, raw func(string) string, timeout time.Duration) {
	d.t.Helper()
	script := b.Script
	if raw != nil {
		script = raw(script)
	}
	script = d.replacer(h).Replace(script)
	name := "admin"
	if h != nil {
		name = h.Name
	}
	file := filepath.Join(d.work, "blocks", fmt.Sprintf("%03d-%s.sh", b.Line, name))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		d.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(d.t.Context(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	env := os.Environ()
	if h == nil {
		cmd = exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", file)
		cmd.Dir = d.root
	} else {
		cmd = exec.CommandContext(ctx, "nsenter", "--net="+h.NetnsPath(), "--", "bash", "-e", "-o", "pipefail", file)
		cmd.Dir = d.work
		env = append(env, "PATH="+filepath.Join(h.Dir, "shim")+":"+os.Getenv("PATH"))
		if h.Name == devstack.HostControl {
			env = append(env, "PGHOST="+d.pgSocketDir())
		}
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	_ = os.WriteFile(file+".log", out.Bytes(), 0o644)
	d.t.Logf("## %s (docs/deployment.md:%d) on %s: %s in %s; script %s\n%s", b.Heading, b.Line, name,
		map[bool]string{true: "ok", false: "FAILED"}[err == nil], time.Since(start).Round(time.Millisecond), file, lastLines(out.String(), 15))
	if err != nil {
		d.t.Fatalf("the block of %q at docs/deployment.md:%d failed on %s: %v", b.Heading, b.Line, name, err)
	}
}

// lastLines is the end of s, at most n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// systemctl carries out a block's systemctl command on host hostName.
func (d *deployment) systemctl(hostName string, args []string) error {
	h := d.hosts[hostName]
	if h == nil {
		return fmt.Errorf("no host %q", hostName)
	}
	if len(args) == 0 {
		return errUnknownVerb
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "daemon-reload":
		return nil
	case "enable":
		if !slices.Contains(rest, "--now") {
			return nil
		}
	case "start", "restart":
	default:
		return fmt.Errorf("%w: %s", errUnknownVerb, strings.Join(args, " "))
	}
	for _, unit := range unitNames(rest) {
		if err := d.startUnit(h, unit); err != nil {
			return fmt.Errorf("%s on %s: %w", unit, h.Name, err)
		}
	}
	return nil
}

// startUnit (re)starts unit on h: PostgreSQL's cluster, or the unit file installed on
// the host (/etc/systemd/system) or by a Debian package (/lib/systemd/system).
func (d *deployment) startUnit(h *depHost, unit string) error {
	if unit == "postgresql@15-main.service" {
		return d.startPostgres(h)
	}
	path := filepath.Join(h.Dir, "etc/systemd/system", unit)
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join("/lib/systemd/system", unit)
	}
	u, err := parseUnit(path)
	if err != nil {
		return err
	}
	if err := d.rewriteConfigs(h); err != nil {
		return err
	}
	uid, gid, err := lookupIDs(u)
	if err != nil {
		return err
	}
	sub := d.replacer(h)
	if err := unitDirs(u, sub, uid, gid); err != nil {
		return err
	}
	argv := strings.Fields(sub.Replace(u.last("Service.ExecStart")))
	if len(argv) == 0 {
		return fmt.Errorf("%s has no ExecStart", path)
	}
	delay := 100 * time.Millisecond
	if rs := u.last("Service.RestartSec"); rs != "" {
		if delay, err = unitDuration(rs); err != nil {
			return err
		}
	}
	key := h.Name + "/" + unit
	d.mu.Lock()
	old := d.units[key]
	d.mu.Unlock()
	if old != nil {
		old.stop(30 * time.Second)
	}
	e := &emulatedUnit{name: key, host: h, argv: argv, uid: uid, gid: gid, delay: delay,
		restart: u.last("Service.Restart") == "on-failure",
		logPath: filepath.Join(h.Dir, "log", strings.TrimSuffix(unit, ".service")+".log")}
	if err := os.MkdirAll(filepath.Dir(e.logPath), 0o755); err != nil {
		return err
	}
	if err := e.start(); err != nil {
		return err
	}
	d.mu.Lock()
	d.units[key] = e
	d.order = append(d.order, e)
	d.mu.Unlock()
	d.t.Logf("systemctl: started %s on %s: %s (uid %d gid %d), log %s", unit, h.Name, strings.Join(argv, " "), uid, gid, e.logPath)
	return nil
}

// rewriteConfigs substitutes the host's paths in the configuration files the blocks
// installed in its /etc/drover (their addresses were substituted in the deployment
// directory already), once each; on cells also the containerd namespace.
func (d *deployment) rewriteConfigs(h *depHost) error {
	files, err := filepath.Glob(filepath.Join(h.Dir, "etc/drover/*.json"))
	if err != nil {
		return err
	}
	sub := strings.NewReplacer(d.pathPairs(h)...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		text := string(data)
		if strings.Contains(text, d.work) {
			continue
		}
		text = sub.Replace(text)
		if strings.HasPrefix(h.Name, "cell-") {
			text = strings.Replace(text, `"containerd_namespace": "drover"`, `"containerd_namespace": "`+d.cellNamespace(h.Name)+`"`, 1)
		}
		fi, err := os.Stat(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f, []byte(text), fi.Mode()); err != nil {
			return err
		}
	}
	return nil
}

// pgSocketDir is where the test's PostgreSQL keeps its socket.
func (d *deployment) pgSocketDir() string {
	return filepath.Join(d.hosts[devstack.HostControl].Dir, "run/postgresql")
}

// initPostgres makes the fresh cluster the PostgreSQL block configures (Debian's package
// makes one at installation): initdb as postgres with peer authentication on the socket
// and SCRAM over TCP, its socket in a directory of the control host's own.
func (d *deployment) initPostgres() error {
	pg, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	var uid, gid int
	fmt.Sscan(pg.Uid, &uid)
	fmt.Sscan(pg.Gid, &gid)
	for _, dir := range []string{filepath.Dir(d.pgData), d.pgSocketDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	out, err := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(d.pgBin, "initdb"), "-D", d.pgData,
		"-U", "postgres", "--auth-local=peer", "--auth-host=scram-sha-256", "--encoding=UTF8").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(d.pgData, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "# TestDeployment: the socket in the control host's directory\nunix_socket_directories = '%s'\n", d.pgSocketDir())
	return err
}

// startPostgres (re)starts the cluster in the control host's namespace.
func (d *deployment) startPostgres(h *depHost) error {
	if err := os.MkdirAll(filepath.Join(h.Dir, "log"), 0o755); err != nil {
		return err
	}
	logFile := filepath.Join(h.Dir, "log", "postgresql.log")
	if _, err := os.Stat(logFile); err != nil {
		_ = os.WriteFile(logFile, nil, 0o666)
		_ = os.Chmod(logFile, 0o666)
	}
	verb := "start"
	if _, err := os.Stat(filepath.Join(d.pgData, "postmaster.pid")); err == nil {
		verb = "restart"
	}
	out, err := exec.Command("nsenter", "--net="+h.NetnsPath(), "--", "runuser", "-u", "postgres", "--",
		filepath.Join(d.pgBin, "pg_ctl"), "-D", d.pgData, "-l", logFile, "-w", "-t", "60", "-m", "fast", verb).CombinedOutput()
	if err != nil {
		data, _ := os.ReadFile(logFile)
		return fmt.Errorf("pg_ctl restart: %w: %s\n%s", err, out, lastLines(string(data), 20))
	}
	d.t.Logf("systemctl: PostgreSQL started on %s (%s)", h.Name, d.pgData)
	return nil
}

// stopPostgres stops the cluster if it runs.
func (d *deployment) stopPostgres() error {
	if _, err := os.Stat(filepath.Join(d.pgData, "postmaster.pid")); err != nil {
		return nil
	}
	out, err := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(d.pgBin, "pg_ctl"), "-D", d.pgData, "-w", "-t", "60", "-m", "fast", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// cleanup stops every unit (the reps first, each with a deadline: an evacuating rep
// with instances left is killed), PostgreSQL, purges the cells' containerd namespaces,
// unmounts what is left under the work directory, removes the test network, the drover
// user if the test created it, and the work directory.
func (d *deployment) cleanup() {
	ctx := context.WithoutCancel(d.t.Context())
	d.mu.Lock()
	units := append([]*emulatedUnit(nil), d.order...)
	d.mu.Unlock()
	var reps, others []*emulatedUnit
	for _, u := range units {
		if strings.HasSuffix(u.name, "/drover-rep.service") {
			reps = append(reps, u)
		} else {
			others = append(others, u)
		}
	}
	var wg sync.WaitGroup
	for _, u := range reps {
		wg.Add(1)
		go func() { defer wg.Done(); u.stop(30 * time.Second) }()
	}
	wg.Wait()
	for i := len(others) - 1; i >= 0; i-- {
		others[i].stop(15 * time.Second)
	}
	var errs []error
	errs = append(errs, d.stopPostgres())
	for i := 1; i <= deploymentCells; i++ {
		if d.containerd.Socket != "" {
			errs = append(errs, d.containerd.PurgeNamespace(ctx, d.cellNamespace(devstack.CellHostName(i))))
		}
	}
	if d.work != "" {
		errs = append(errs, unmountAllUnder(d.work))
	}
	if d.net != nil {
		errs = append(errs, d.net.Remove(ctx))
		if left := d.net.Leftovers(ctx); len(left) > 0 {
			errs = append(errs, fmt.Errorf("test network leftovers: %v", left))
		}
	}
	if _, err := user.Lookup("drover"); err == nil && d.createdUser {
		if out, err := exec.Command("userdel", "drover").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("userdel drover: %w: %s", err, out))
		}
	}
	if d.work != "" && os.Getenv("DROVER_DEPLOYMENT_KEEP") == "" {
		errs = append(errs, os.RemoveAll(d.work))
	}
	if err := errors.Join(errs...); err != nil {
		d.t.Errorf("cleanup: %v", err)
	}
}

// unmountAllUnder unmounts (lazily, deepest first) every mount point under dir.
func unmountAllUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
