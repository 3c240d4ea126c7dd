package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// Deadlines of the cell scenarios.
const (
	// runningWait bounds the wait for instances to reach RUNNING (auction, container
	// creation, first health check).
	runningWait = 60 * time.Second
	// settleWait bounds waits for crashes, restarts, stops and cleanup.
	settleWait = 60 * time.Second
	// cellPoll is how often the cell waits re-check.
	cellPoll = 100 * time.Millisecond
	// cellDomain is the domain of every LRP and task of the cell scenarios.
	cellDomain = "cells"
	// httpPort is the container port busybox httpd listens on.
	httpPort = 8080
)

// cellStack is a test stack with cells and a BBS client.
type cellStack struct {
	*devstack.Stack
	bbs *client.Client
}

// newCellStack starts a stack with n cells; configure may change each rep's config.
func newCellStack(t *testing.T, n int, configure func(i int, c *repconfig.Config)) *cellStack {
	t.Helper()
	s := devstacktest.New(t, devstacktest.Options{Cells: n, ConfigureRep: configure})
	return &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}
}

// runAction is a run action of path with args.
func runAction(path string, args ...string) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: path, Args: args, User: "root"}}}
}

// shAction runs script with busybox sh.
func shAction(script string) *modelsv1.Action { return runAction("/bin/sh", "-c", script) }

// httpdScript serves a page holding the instance index on httpPort.
const httpdScript = `mkdir -p /tmp/www && echo "index=$CF_INSTANCE_INDEX" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`

// httpdLRP is an LRP of busybox httpd instances on preloaded:busybox whose page says
// "index=$CF_INSTANCE_INDEX", with an HTTP health check.
func httpdLRP(guid string, instances int32) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid:  guid,
		Domain:       cellDomain,
		Instances:    instances,
		Rootfs:       "preloaded:busybox",
		MemoryMb:     64,
		DiskMb:       64,
		Ports:        []uint32{httpPort},
		StartTimeout: 30,
		Action:       shAction(httpdScript),
		CheckDefinition: &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{
			{HttpCheck: &modelsv1.HTTPCheck{Port: httpPort, Path: "/"}},
		}},
		LogGuid: guid,
	}
}

// desire creates lrp, and removes it when the test ends (also when it fails half-way,
// so that later scenarios on the same stack start from an empty host).
func (cs *cellStack) desire(t *testing.T, lrp *modelsv1.DesiredLRP) {
	t.Helper()
	_, err := cs.bbs.DesireLRP(callCtx(t), &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = cs.bbs.RemoveDesiredLRP(ctx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: lrp.GetProcessGuid()}) // gone already when the test passed
	})
}

// actuals lists guid's ActualLRPs.
func (cs *cellStack) actuals(t *testing.T, guid string) []*modelsv1.ActualLRP {
	t.Helper()
	return listActualLRPs(t, cs.bbs, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid})
}

// waitActuals polls guid's ActualLRPs until ok accepts them and returns them; on timeout
// it fails with what it last saw.
func (cs *cellStack) waitActuals(t *testing.T, guid string, wait time.Duration, what string, ok func([]*modelsv1.ActualLRP) bool) []*modelsv1.ActualLRP {
	t.Helper()
	var last []*modelsv1.ActualLRP
	deadline := time.Now().Add(wait)
	for {
		last = cs.actuals(t, guid)
		if ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; actual LRPs of %s:\n%s", what, wait, guid, describeActuals(last))
		}
		time.Sleep(cellPoll)
	}
}

// waitRunning waits until guid has n RUNNING instances and returns them by index.
func (cs *cellStack) waitRunning(t *testing.T, guid string, n int) map[int32]*modelsv1.ActualLRP {
	t.Helper()
	lrps := cs.waitActuals(t, guid, runningWait, fmt.Sprintf("%d RUNNING instances", n), func(as []*modelsv1.ActualLRP) bool {
		return countState(as, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING) == n && len(as) == n
	})
	byIndex := map[int32]*modelsv1.ActualLRP{}
	for _, a := range lrps {
		byIndex[a.GetIndex()] = a
	}
	return byIndex
}

// removeAndWaitClean removes guid, waits until its ActualLRPs are gone and then until
// the host holds nothing of any cell.
func (cs *cellStack) removeAndWaitClean(t *testing.T, guid string) {
	t.Helper()
	_, err := cs.bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
	require.NoError(t, err)
	cs.waitActuals(t, guid, settleWait, "all instances gone", func(as []*modelsv1.ActualLRP) bool { return len(as) == 0 })
	cs.requireHostClean(t)
}

// requireHostClean waits until no cell of the stack leaves anything on the host: no
// container or task in its namespace, no netns file, no veth on its bridge, no iptables
// rule naming its subnet or network, no mount under its directory.
func (cs *cellStack) requireHostClean(t *testing.T) {
	t.Helper()
	var left []string
	deadline := time.Now().Add(settleWait)
	for {
		left = nil
		for _, r := range cs.Reps {
			items, err := cs.CellLeftovers(t.Context(), r)
			require.NoError(t, err)
			left = append(left, items...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cells left on the host after %s:\n  %s", settleWait, strings.Join(left, "\n  "))
		}
		time.Sleep(cellPoll)
	}
}

func countState(as []*modelsv1.ActualLRP, state modelsv1.ActualLRPState) int {
	n := 0
	for _, a := range as {
		if a.GetState() == state {
			n++
		}
	}
	return n
}

func describeActuals(as []*modelsv1.ActualLRP) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "  index %d %s cell %q crashes %d reason %q placement_error %q\n", a.GetIndex(), a.GetState(),
			a.GetCellId(), a.GetCrashCount(), a.GetCrashReason(), a.GetPlacementError())
	}
	return b.String()
}

// hostURL is the http URL of an instance's container port on its cell's address.
func hostURL(t *testing.T, a *modelsv1.ActualLRP, containerPort uint32) string {
	t.Helper()
	for _, p := range a.GetNetInfo().GetPorts() {
		if p.GetContainerPort() == containerPort {
			return "http://" + a.GetNetInfo().GetAddress() + ":" + strconv.Itoa(int(p.GetHostPort())) + "/"
		}
	}
	t.Fatalf("instance %d has no host port for %d: %v", a.GetIndex(), containerPort, a.GetNetInfo())
	return ""
}

// httpGet returns the body of a GET, or an error.
func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}

// requireServesIndex requires the instance's host port to answer with its own index.
func requireServesIndex(t *testing.T, a *modelsv1.ActualLRP) {
	t.Helper()
	url := hostURL(t, a, httpPort)
	var body string
	var err error
	require.Eventually(t, func() bool {
		body, err = httpGet(url)
		return err == nil
	}, settleWait, cellPoll, "instance %d at %s: %v", a.GetIndex(), url, err)
	require.Equal(t, "index="+strconv.Itoa(int(a.GetIndex())), strings.TrimSpace(body), "instance %d at %s", a.GetIndex(), url)
}

// instancePids lists the host pids of an instance's processes: those whose environment
// holds INSTANCE_GUID=guid (the rep sets it on every process of an instance), optionally
// only those whose command name is comm.
func instancePids(guid, comm string) []int { return envPids("INSTANCE_GUID="+guid, comm) }

// envPids lists the host pids of the processes whose environment holds kv, optionally
// only those whose command name is comm.
func envPids(kv, comm string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !containsEnv(environ, kv) {
			continue
		}
		if comm != "" {
			name, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			if err != nil || strings.TrimSpace(string(name)) != comm {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

func containsEnv(environ []byte, kv string) bool {
	for _, v := range strings.Split(string(environ), "\x00") {
		if v == kv {
			return true
		}
	}
	return false
}

// killInstanceProcess sends SIGKILL to the instance's comm processes, found on the host.
func killInstanceProcess(t *testing.T, instanceGuid, comm string) {
	t.Helper()
	var pids []int
	require.Eventually(t, func() bool {
		pids = instancePids(instanceGuid, comm)
		return len(pids) > 0
	}, settleWait, cellPoll, "no %s process of instance %s found in /proc", comm, instanceGuid)
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
}

// desireTask creates a task on preloaded:busybox running script.
func (cs *cellStack) desireTask(t *testing.T, guid string, def *modelsv1.TaskDefinition) {
	t.Helper()
	if def.Rootfs == "" {
		def.Rootfs = "preloaded:busybox"
	}
	if def.MemoryMb == 0 {
		def.MemoryMb = 64
	}
	if def.DiskMb == 0 {
		def.DiskMb = 64
	}
	_, err := cs.bbs.DesireTask(callCtx(t), &bbsv1.DesireTaskRequest{TaskGuid: guid, Domain: cellDomain, TaskDefinition: def})
	require.NoError(t, err)
}

// waitTask polls the task until ok accepts it.
func (cs *cellStack) waitTask(t *testing.T, guid string, what string, ok func(*modelsv1.Task) bool) *modelsv1.Task {
	t.Helper()
	var last *modelsv1.Task
	deadline := time.Now().Add(runningWait)
	for {
		resp, err := cs.bbs.GetTask(callCtx(t), &bbsv1.GetTaskRequest{TaskGuid: guid})
		require.NoError(t, err)
		last = resp.GetTask()
		if ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %s: not within %s; last: state %s cell %q failed %v reason %q result %q", guid, what, runningWait,
				last.GetState(), last.GetCellId(), last.GetFailed(), last.GetFailureReason(), last.GetResult())
		}
		time.Sleep(cellPoll)
	}
}

// waitTaskCompleted waits until the task is COMPLETED (or later).
func (cs *cellStack) waitTaskCompleted(t *testing.T, guid string) *modelsv1.Task {
	t.Helper()
	return cs.waitTask(t, guid, "completed", func(task *modelsv1.Task) bool {
		return task.GetState() == modelsv1.TaskState_TASK_STATE_COMPLETED || task.GetState() == modelsv1.TaskState_TASK_STATE_RESOLVING
	})
}

// ctxFor bounds a scenario step.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestDevExampleLRPIsValid keeps the README's and `make up`'s example LRP decodable and valid.
func TestDevExampleLRPIsValid(t *testing.T) {
	data, err := os.ReadFile("testdata/busybox_httpd_lrp.json")
	require.NoError(t, err)
	lrp, err := jsonapi.DecodeDesiredLRP(data)
	require.NoError(t, err)
	require.NoError(t, models.ValidateDesiredLRP(lrp))
	require.Equal(t, "preloaded:busybox", lrp.GetRootfs())
}

// countByCell counts the instances on each cell.
func countByCell(as []*modelsv1.ActualLRP) map[string]int {
	out := map[string]int{}
	for _, a := range as {
		out[a.GetCellId()]++
	}
	return out
}

// runningValues returns the values of a waitRunning result.
func runningValues(m map[int32]*modelsv1.ActualLRP) []*modelsv1.ActualLRP {
	out := make([]*modelsv1.ActualLRP, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	return out
}
