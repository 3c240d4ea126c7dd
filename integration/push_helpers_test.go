package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Settings of the push scenarios.
const (
	// appsDomain is the domain pushed apps are routed under.
	appsDomain = "example.com"
	// pushTimeout bounds one droverctl push.
	pushTimeout = 4 * time.Minute
)

// pushStack is a routed stack with a fileserver.
type pushStack struct {
	*routedStack
}

// newPushStack starts a stack with n cells, the routing side, a fileserver and a stager
// (busybox only).
func newPushStack(t *testing.T, n int) *pushStack {
	t.Helper()
	return newPushStackWith(t, devstacktest.Options{Cells: n, Stager: &devstacktest.StagerOptions{}})
}

// newPushStackWith starts a stack shaped by opts plus the routing side, a fileserver and
// (unless opts has one) a stager.
func newPushStackWith(t *testing.T, opts devstacktest.Options) *pushStack {
	t.Helper()
	opts.Routing, opts.Fileserver = &devstacktest.RoutingOptions{}, true
	if opts.Stager == nil {
		opts.Stager = &devstacktest.StagerOptions{}
	}
	s := devstacktest.New(t, opts)
	return &pushStack{routedStack: &routedStack{cellStack: &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}}}
}

// pushResult is what one droverctl run printed and how it ended.
type pushResult struct {
	stdout, stderr string
	err            error
}

// output is stdout and stderr together, for failure messages.
func (r pushResult) output() string { return "stdout:\n" + r.stdout + "\nstderr:\n" + r.stderr }

// droverctlRun runs droverctl with args against the stack, bounded by pushTimeout.
func (ps *pushStack) droverctlRun(t *testing.T, args ...string) pushResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pushTimeout)
	defer cancel()
	cmd := droverctlCommand(t, ctx, ps.Stack, args...)
	cmd.Env = append(cmd.Env,
		"DROVER_FILESERVER_URL="+ps.Fileserver.URL(),
		"DROVER_ROUTE_EMITTER_ADDRESS="+ps.RouteEmitter.Address(),
		"DROVER_APPS_DOMAIN="+appsDomain,
	)
	if ps.Stager != nil {
		cmd.Env = append(cmd.Env, "DROVER_STAGER_ADDRESS="+ps.Stager.Address())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := pushResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
	t.Logf("droverctl %s: %v\n%s", strings.Join(args, " "), err, res.output())
	return res
}

// push runs droverctl push dir --name name plus extra flags.
func (ps *pushStack) push(t *testing.T, dir, name string, extra ...string) pushResult {
	t.Helper()
	return ps.droverctlRun(t, append([]string{"push", dir, "--name", name}, extra...)...)
}

// appLRPs lists the desired LRPs in the apps domain whose annotation names app name.
func (ps *pushStack) appLRPs(t *testing.T, name string) []*modelsv1.DesiredLRP {
	t.Helper()
	resp, err := ps.bbs.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{Domain: "apps"})
	require.NoError(t, err)
	var out []*modelsv1.DesiredLRP
	for _, d := range resp.GetDesiredLrps() {
		if strings.Contains(d.GetAnnotation(), `"app_name":"`+name+`"`) {
			out = append(out, d)
		}
	}
	return out
}

// tasks lists every task in the BBS.
func (ps *pushStack) tasks(t *testing.T) []*modelsv1.Task {
	t.Helper()
	resp, err := ps.bbs.ListTasks(callCtx(t), &bbsv1.ListTasksRequest{})
	require.NoError(t, err)
	return resp.GetTasks()
}

// fileserverCounter reads one sample of the fileserver's Prometheus metrics, e.g.
// `drover_fileserver_package_files_total{source="received"}`; absent counts as 0.
func (ps *pushStack) fileserverCounter(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := http.Get(ps.Fileserver.DebugURL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			require.NoError(t, err, line)
			return v
		}
	}
	require.NoError(t, sc.Err())
	return 0
}

// waitServing polls the router with Host hostname until every one of want is seen in
// a 200 answer, and returns the bodies seen.
func (ps *pushStack) waitServing(t *testing.T, hostname string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(routeWait)
	seen := map[string]bool{}
	var last string
	for time.Now().Before(deadline) {
		code, body, err := ps.getThroughRouter(hostname)
		last = fmt.Sprintf("%d %q %v", code, body, err)
		if err == nil && code == http.StatusOK {
			for _, w := range want {
				if strings.Contains(body, w) {
					seen[w] = true
				}
			}
			if len(seen) == len(want) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never answered with all of %q through the router (seen %v, last %s)", hostname, want, seen, last)
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	require.NoError(t, err)
	return dst
}

// example is the path of an app in examples/.
func (ps *pushStack) example(name string) string { return filepath.Join(ps.Root, "examples", name) }
