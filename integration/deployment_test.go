package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/testenv"

	auctioneerconfig "drover.dev/auctioneer/config"
	bbsconfig "drover.dev/bbs/config"
	convergerconfig "drover.dev/converger/config"
	"drover.dev/devstack"
	fileserverconfig "drover.dev/fileserver/config"
	repconfig "drover.dev/rep/config"
	routeemitterconfig "drover.dev/route-emitter/config"
	stagerconfig "drover.dev/stager/config"
)

// deployedService is one service of docs/deployment.md: its example configuration
// (deploy/config/NAME.json), its systemd unit (deploy/systemd/drover-NAME.service), the
// loader of its configuration, and the fields of the configuration a production
// deployment leaves at their defaults on purpose (with the reason).
type deployedService struct {
	name string
	// load loads and validates the file with the component's own loader and returns
	// the loaded value (a pointer to its Config).
	load func(path string) (any, error)
	// unset are the configuration's JSON fields the example does not set, and why.
	unset map[string]string
}

// deployedServices are the services a deployment runs from deploy/.
var deployedServices = []deployedService{
	{name: "bbs", load: loader(bbsconfig.Load)},
	{name: "auctioneer", load: loader(auctioneerconfig.Load)},
	{name: "converger", load: loader(convergerconfig.Load)},
	{name: "route-emitter", load: loader(routeemitterconfig.Load), unset: map[string]string{
		"cell_id":       "global mode (one active emitter by lock), not one per cell",
		"nats_password": "the password is in nats_password_file",
	}},
	{name: "fileserver", load: loader(fileserverconfig.Load)},
	{name: "stager", load: loader(stagerconfig.Load)},
	{name: "rep", load: loader(repconfig.Load), unset: map[string]string{
		"placement_tags":               "no isolation segments in the example",
		"optional_placement_tags":      "no isolation segments in the example",
		"executor.insecure_registries": "every registry is HTTPS",
		"executor.registry_ca_file":    "registries have certificates of public CAs",
		"executor.sim_start_latency":   "the sim backend is for scale tests",
		"executor.sim_failure_rate":    "the sim backend is for scale tests",
		"executor.unhealthy_interval":  "the default suits production",
		"executor.healthy_interval":    "the default suits production",
		"executor.reserved_expiration": "the default suits production",
		"executor.reap_interval":       "the default suits production",
		"executor.metrics_interval":    "the default suits production",
		"executor.disk_poll_interval":  "the default suits production",
	}},
}

// loader adapts a component's Load to deployedService.load.
func loader[C any](load func(string) (*C, error)) func(string) (any, error) {
	return func(path string) (any, error) { return load(path) }
}

// deployDir is the repository's deploy/ directory.
func deployDir(t *testing.T) string {
	t.Helper()
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	return filepath.Join(root, "deploy")
}

// configPathSubstitutions are the only changes TestDeploymentConfigs makes to the example
// configurations before loading them: the directories they name are moved under a
// scratch directory, where the files a loader reads or checks are created (the
// fileserver's loader requires static_directory to exist and reads signing_key_file;
// the others only check that paths are given). Addresses stay as they are.
func configPathSubstitutions(scratch string) []string {
	return []string{
		"/etc/drover/", filepath.Join(scratch, "etc/drover") + "/",
		"/var/lib/drover/", filepath.Join(scratch, "var/lib/drover") + "/",
	}
}

// TestDeploymentConfigs loads every example configuration of deploy/config with its
// component's own loader (validation included), fails on a service without one or a
// file for no service, and requires each file to set every field of its configuration
// but the ones listed (with a reason) in deployedServices, and to name no loopback
// address.
func TestDeploymentConfigs(t *testing.T) {
	dir := filepath.Join(deployDir(t), "config")
	scratch := t.TempDir()
	for _, d := range []string{"etc/drover/certs", "etc/drover/secrets", "var/lib/drover/fileserver/static", "var/lib/drover/rootfs"} {
		require.NoError(t, os.MkdirAll(filepath.Join(scratch, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "etc/drover/secrets/fileserver-signing.key"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	subst := strings.NewReplacer(configPathSubstitutions(scratch)...)

	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	known := map[string]bool{}
	for _, svc := range deployedServices {
		known[svc.name+".json"] = true
	}
	for _, f := range files {
		require.True(t, known[filepath.Base(f)], "deploy/config/%s is the configuration of no deployed service", filepath.Base(f))
	}

	for _, svc := range deployedServices {
		t.Run(svc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, svc.name+".json"))
			require.NoError(t, err, "deploy/config/%s.json is missing", svc.name)
			require.NotContains(t, string(raw), "127.0.0.1", "a production configuration names no loopback address")
			require.NotContains(t, string(raw), "localhost")
			path := filepath.Join(scratch, svc.name+".json")
			require.NoError(t, os.WriteFile(path, []byte(subst.Replace(string(raw))), 0o600))
			cfg, err := svc.load(path)
			require.NoError(t, err, "deploy/config/%s.json does not load with its own loader", svc.name)
			require.NotNil(t, cfg)

			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			set := jsonKeys("", doc)
			var missing []string
			for _, field := range jsonFields("", reflect.TypeOf(cfg).Elem()) {
				if set[field] {
					continue
				}
				if _, ok := svc.unset[field]; !ok {
					missing = append(missing, field)
				}
			}
			require.Empty(t, missing, "deploy/config/%s.json leaves these fields unset without a reason in deployedServices", svc.name)
		})
	}
}

// jsonKeys are the keys of a decoded JSON object and, with a dot, of the objects in it
// (maps of names such as encryption_keys count as set as a whole).
func jsonKeys(prefix string, doc map[string]any) map[string]bool {
	out := map[string]bool{}
	for k, v := range doc {
		out[prefix+k] = true
		if inner, ok := v.(map[string]any); ok {
			for ik := range jsonKeys(prefix+k+".", inner) {
				out[ik] = true
			}
		}
	}
	return out
}

// jsonFields are the JSON names of a configuration struct's fields, flattening embedded
// structs (lock.Config) and naming the fields of nested structs (executor.*, tls.*).
func jsonFields(prefix string, typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := strings.Split(f.Tag.Get("json"), ",")[0]
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(prefix, f.Type)...)
			continue
		}
		if tag == "-" || tag == "" {
			continue
		}
		out = append(out, prefix+tag)
		if f.Type.Kind() == reflect.Struct && f.Type.NumField() > 0 && f.Type.PkgPath() != "time" && !strings.HasSuffix(f.Type.Name(), "Duration") {
			out = append(out, jsonFields(prefix+tag+".", f.Type)...)
		}
	}
	sort.Strings(out)
	return out
}

// unitFile is a parsed systemd unit: each key's values, in order, by section.
type unitFile map[string][]string

// readUnit parses a systemd unit file (parseUnit), failing t on error.
func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	u, err := parseUnit(path)
	require.NoError(t, err)
	return u
}

// one is the single value of key.
func (u unitFile) one(t *testing.T, key string) string {
	t.Helper()
	require.Len(t, u[key], 1, "%s must be set once", key)
	return u[key][0]
}

// TestDeploymentUnits checks each systemd unit of deploy/systemd: the command line
// (/usr/local/bin/NAME -config /etc/drover/NAME.json), the user (drover; root for the
// rep), restart on failure, a state directory, a file limit, the ordering after the
// network (and containerd for the rep), SIGTERM, and a stop timeout (the rep's longer
// than its example evacuation_timeout).
func TestDeploymentUnits(t *testing.T) {
	dir := filepath.Join(deployDir(t), "systemd")
	units, err := filepath.Glob(filepath.Join(dir, "*.service"))
	require.NoError(t, err)
	require.Len(t, units, len(deployedServices), "one unit per deployed service")
	for _, svc := range deployedServices {
		t.Run(svc.name, func(t *testing.T) {
			u := readUnit(t, filepath.Join(dir, "drover-"+svc.name+".service"))
			require.Equal(t, "/usr/local/bin/"+svc.name+" -config /etc/drover/"+svc.name+".json", u.one(t, "Service.ExecStart"))
			user, group := "drover", "drover"
			if svc.name == "rep" {
				user, group = "root", "root"
			}
			require.Equal(t, user, u.one(t, "Service.User"))
			require.Equal(t, group, u.one(t, "Service.Group"))
			require.Equal(t, "on-failure", u.one(t, "Service.Restart"))
			require.Equal(t, "drover/"+svc.name, u.one(t, "Service.StateDirectory"))
			require.NotEmpty(t, u.one(t, "Service.LimitNOFILE"))
			require.Equal(t, "SIGTERM", u.one(t, "Service.KillSignal"))
			after := strings.Fields(strings.Join(u["Unit.After"], " "))
			require.Contains(t, after, "network-online.target")
			stop, err := unitDuration(u.one(t, "Service.TimeoutStopSec"))
			require.NoError(t, err)
			require.Positive(t, stop)
			if svc.name == "rep" {
				require.Contains(t, after, "containerd.service")
				cfg, err := repconfig.Load(writeSubstituted(t, "rep"))
				require.NoError(t, err)
				require.Greater(t, stop, cfg.EvacuationTimeout.Duration(), "the rep's TimeoutStopSec leaves time to evacuate")
			}
		})
	}
}

// writeSubstituted writes deploy/config/NAME.json with configPathSubstitutions into a
// scratch directory and returns its path.
func writeSubstituted(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(deployDir(t), "config", name+".json"))
	require.NoError(t, err)
	scratch := t.TempDir()
	path := filepath.Join(scratch, name+".json")
	require.NoError(t, os.WriteFile(path, []byte(strings.NewReplacer(configPathSubstitutions(scratch)...).Replace(string(raw))), 0o600))
	return path
}

// unitDuration parses a systemd time span as the units here write it: "30s", "11min",
// "90".
func unitDuration(s string) (time.Duration, error) {
	if strings.HasSuffix(s, "min") {
		s = strings.TrimSuffix(s, "in")
	}
	if !strings.ContainsAny(s, "smh") {
		s += "s"
	}
	return time.ParseDuration(s)
}

// deploymentCells is the number of cell hosts of TestDeployment (the page's CELLS).
const deploymentCells = 3

// deploymentSteps are the blocks of docs/deployment.md TestDeployment runs, in order:
// the heading, the block's "run on", and where the test runs it.
var deploymentSteps = []struct{ heading, runOn string }{
	{"Build", "admin"},
	{"Certificates and secrets", "admin"},
	{"PostgreSQL", "control-1"},
	{"NATS", "router"},
	{"Control hosts", "control-1"},
	{"Cells", "every cell"},
	{"Buildpacks", "admin"},
	{"Smoke test", "client"},
}

// deploymentNotRun are the blocks TestDeployment does not run, and why.
var deploymentNotRun = map[string]string{
	"Control hosts/control-2": "the test network has one control host",
}

// TestDeployment (issue 16, acceptance 5) follows docs/deployment.md literally on the
// multi-host test network (devstack.CreateHostNetwork: control, router, client and
// three cell hosts, each a network namespace with its own address): it runs the page's
// shell blocks in order on their hosts with a printed substitution table (addresses,
// paths, cell names; see the page's "The test"), carries out their systemctl commands
// by starting each unit's ExecStart as its User/Group in the host's namespace, and ends
// with the page's smoke test: an LRP of three instances desired over the BBS's HTTPS API
// from the client host answers on every instance through the router. Everything it
// made (processes, containers, mounts, namespaces, the bridge, the drover user if it
// created it, files) is removed, also when it fails.
func TestDeployment(t *testing.T) {
	testenv.RequireRoot(t, "the deployment runs services as their users in network namespaces")
	for _, tool := range []string{"openssl", "nsenter", "setpriv", "runuser", "curl", "psql", "useradd", "userdel", "go", "tar", "ip", devstack.NATSServerBinary} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "install it (scripts/install-deps.sh)")
		}
	}
	const pgBin = "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		testenv.Missing(t, "PostgreSQL 15", "the page configures Debian's cluster 15/main: install postgresql-15")
	}
	if _, err := user.Lookup("nats"); err != nil {
		testenv.Missing(t, "the nats user", "install Debian's nats-server package")
	}
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	blocks, err := readDocBlocks(filepath.Join(root, "docs", "deployment.md"))
	require.NoError(t, err)
	requireEveryBlockPlanned(t, blocks)

	work, err := os.MkdirTemp("", "drover-deployment-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(work, 0o755))
	d := &deployment{t: t, root: root, work: work, deployDir: filepath.Join(work, "srv-drover-deploy"),
		hosts: map[string]*depHost{}, units: map[string]*emulatedUnit{}, pgBin: pgBin}
	if _, err := user.Lookup("drover"); err != nil {
		d.createdUser = true
	}
	t.Cleanup(d.cleanup)

	ctx := t.Context()
	d.containerd, err = devstack.StartContainerd(ctx, root, devstack.DefaultHome(root))
	require.NoError(t, err)
	id, err := devstack.NewHostID()
	require.NoError(t, err)
	d.nsPrefix = "drover-dep" + id + "-"
	d.net, err = devstack.CreateHostNetwork(ctx, id, deploymentCells)
	require.NoError(t, err)
	for _, h := range d.net.Hosts {
		dh := &depHost{Host: h, Dir: filepath.Join(work, "hosts", h.Name)}
		// What a Debian host has before anything is installed.
		for _, dir := range []string{"shim", "etc/systemd/system", "usr/local/bin", "var/lib", "run"} {
			require.NoError(t, os.MkdirAll(filepath.Join(dh.Dir, dir), 0o755))
		}
		d.hosts[h.Name] = dh
	}
	d.pgData = filepath.Join(d.hosts[devstack.HostControl].Dir, "var/lib/postgresql/15/main")
	sock := filepath.Join(work, "systemctl.sock")
	stopServer, err := serveSystemctl(sock, d.systemctl)
	require.NoError(t, err)
	t.Cleanup(stopServer)
	for _, h := range d.hosts {
		shim := fmt.Sprintf(systemctlShim, sock, h.Name)
		require.NoError(t, os.WriteFile(filepath.Join(h.Dir, "shim", "systemctl"), []byte(shim), 0o755))
	}
	d.logTable()

	run := func(heading, runOn string, h *depHost, raw func(string) string, timeout time.Duration) {
		t.Helper()
		for _, b := range blocks {
			if b.Heading == heading && b.RunOn == runOn {
				d.runBlock(b, h, raw, timeout)
				return
			}
		}
		t.Fatalf("docs/deployment.md has no block run on %s under %q", runOn, heading)
	}
	control, router, client := d.hosts[devstack.HostControl], d.hosts[devstack.HostRouter], d.hosts[devstack.HostClient]

	run("Build", "admin", nil, nil, 20*time.Minute)
	// The example configurations the page copied get the test's addresses (each host's
	// paths are substituted where the blocks install them: rewriteConfigs).
	configs, err := filepath.Glob(filepath.Join(d.deployDir, "config", "*.json"))
	require.NoError(t, err)
	require.Len(t, configs, len(deployedServices))
	addrs := strings.NewReplacer(d.addressPairs()...)
	for _, f := range configs {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f, []byte(addrs.Replace(string(data))), 0o644))
	}
	run("Certificates and secrets", "admin", nil, nil, 2*time.Minute)
	require.NoError(t, d.initPostgres())
	run("PostgreSQL", "control-1", control, nil, 3*time.Minute)
	run("NATS", "router", router, nil, 2*time.Minute)
	d.startStandinRouter(router)
	run("Control hosts", "control-1", control, nil, 5*time.Minute)
	for i := 1; i <= deploymentCells; i++ {
		cell := d.hosts[devstack.CellHostName(i)]
		run("Cells", "every cell", cell, func(s string) string {
			return strings.Replace(s, "CELL=cell-1 IP=10.0.1.1", "CELL="+cell.Name+" IP="+cell.IP, 1)
		}, 10*time.Minute)
	}
	run("Buildpacks", "admin", nil, nil, 5*time.Minute)
	run("Smoke test", "client", client, nil, 6*time.Minute)

	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range d.order {
		if n := u.Restarts(); n > 0 {
			t.Logf("%s was restarted %d times after failing (see %s)", u.name, n, u.logPath)
		}
	}
}

// requireEveryBlockPlanned fails unless every runnable block of the page is one
// TestDeployment runs or one deploymentNotRun explains.
func requireEveryBlockPlanned(t *testing.T, blocks []docBlock) {
	t.Helper()
	planned := map[string]bool{}
	for _, s := range deploymentSteps {
		planned[s.heading+"/"+s.runOn] = true
	}
	for _, b := range blocks {
		key := b.Heading + "/" + b.RunOn
		_, skipped := deploymentNotRun[key]
		require.True(t, planned[key] || skipped, "docs/deployment.md:%d: the block run on %q under %q is neither run by TestDeployment nor listed in deploymentNotRun", b.Line, b.RunOn, b.Heading)
	}
	for key := range planned {
		found := false
		for _, b := range blocks {
			found = found || b.Heading+"/"+b.RunOn == key
		}
		require.True(t, found, "docs/deployment.md has no block %s", key)
	}
}

// startStandinRouter builds drover's stand-in for gorouter and runs it on the router
// host's port 80 with gorouter's NATS settings from the page (user router, its password,
// TLS with router.crt).
func (d *deployment) startStandinRouter(h *depHost) {
	t := d.t
	t.Helper()
	bin := filepath.Join(d.work, "bin", "standin-router")
	build := exec.Command("go", "build", "-o", bin, "./devstack/cmd/standin-router")
	build.Dir = d.root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	cfg := map[string]any{
		"nats_addresses":     []string{"nats://" + h.IP + ":4222"},
		"nats_username":      "router",
		"nats_password_file": filepath.Join(d.deployDir, "secrets", "nats-router.password"),
		"nats_tls": map[string]string{
			"ca_file":   filepath.Join(d.deployDir, "pki", "ca.crt"),
			"cert_file": filepath.Join(d.deployDir, "pki", "router.crt"),
			"key_file":  filepath.Join(d.deployDir, "pki", "router.key"),
		},
		"listen_address": h.IP + ":80",
		"admin_address":  h.IP + ":8082",
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(h.Dir, "standin-router.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	u := &emulatedUnit{name: h.Name + "/gorouter (standin-router)", host: h, argv: []string{bin, "-config", path},
		restart: true, delay: time.Second, logPath: filepath.Join(h.Dir, "log", "standin-router.log")}
	require.NoError(t, os.MkdirAll(filepath.Dir(u.logPath), 0o755))
	require.NoError(t, u.start())
	d.mu.Lock()
	d.units[u.name] = u
	d.order = append(d.order, u)
	d.mu.Unlock()
	t.Logf("started the stand-in router on %s:80 (log %s)", h.IP, u.logPath)
}
