package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/devstack"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	repconfig "drover.dev/rep/config"
)

// Timing of the evacuation and cordon scenarios.
const (
	// drainWait bounds a whole drain, from the Evacuate call (or SIGTERM) to the rep's exit.
	drainWait = 60 * time.Second
	// drainSamplePeriod is how often the drain watcher looks at the instances.
	drainSamplePeriod = 150 * time.Millisecond
	// probeTimeout bounds one HTTP probe of an instance during a drain.
	probeTimeout = time.Second
	// testEvacuationPollingInterval shortens the rep's bulk sync and evacuator period while draining.
	testEvacuationPollingInterval = time.Second
	// testEvacuationTimeout bounds a test drain (below drainWait, so that a stuck drain
	// still ends with the rep's cleanup).
	testEvacuationTimeout = 45 * time.Second
)

// fastEvacuation is the rep configuration of the drain scenarios; evacuateOnSigterm
// makes SIGTERM drain the cell.
func fastEvacuation(c *repconfig.Config, evacuateOnSigterm bool) {
	c.EvacuationPollingInterval = libconfig.Duration(testEvacuationPollingInterval)
	c.EvacuationTimeout = libconfig.Duration(testEvacuationTimeout)
	c.EvacuateOnSigterm = evacuateOnSigterm
}

// routedHTTPLRP is httpdLRP with a route to its port, as a routed app has.
func routedHTTPLRP(t *testing.T, guid string, instances int32) *modelsv1.DesiredLRP {
	t.Helper()
	lrp := httpdLRP(guid, instances)
	route, err := structpb.NewValue([]any{map[string]any{
		"hostnames": []any{guid + ".example.com"},
		"port":      float64(httpPort),
	}})
	require.NoError(t, err)
	lrp.Routes = map[string]*structpb.Value{"cf-router": route}
	return lrp
}

// ownedRep is a cell's rep process started by the test itself (not by the devstack), so
// that the test sees its exit code. It runs the rep binary with the configuration file
// the stack wrote and the stack's pid file, so that the stack's cleanup still finds it.
type ownedRep struct {
	rep  *devstack.Rep
	cmd  *exec.Cmd
	done chan struct{}
}

// takeOverRep stops the stack's process of r (a plain stop: r must run no instance yet),
// starts r's binary again as a child of the test and waits until it is healthy. The
// process is killed when the test ends if it still runs.
func takeOverRep(t *testing.T, r *devstack.Rep) *ownedRep {
	t.Helper()
	require.NoError(t, r.Stop(ctxFor(t, settleWait)), "stop %s before taking it over", r.Name)
	stdout, err := os.OpenFile(r.StdoutPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer stdout.Close()
	stderr, err := os.OpenFile(r.StderrPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer stderr.Close()
	cmd := exec.Command(r.Binary, "-config", r.ConfigPath())
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start(), "start %s", r.Binary)
	o := &ownedRep{rep: r, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(o.done)
	}()
	t.Cleanup(func() {
		if o.running() {
			_ = cmd.Process.Kill()
		}
		<-o.done
		os.Remove(r.PidPath())
	})
	require.NoError(t, os.WriteFile(r.PidPath(), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644))
	var healthErr error
	deadline := time.Now().Add(devstack.ComponentStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		healthErr = r.Healthy(ctx)
		cancel()
		if healthErr == nil {
			return o
		}
		if !o.running() {
			t.Fatalf("%s exited (%v) before it was healthy:\n%s", r.Name, cmd.ProcessState, r.LogTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy within %s: %v", r.Name, devstack.ComponentStartTimeout, healthErr)
		}
		time.Sleep(cellPoll)
	}
}

// running reports whether the process has not exited yet.
func (o *ownedRep) running() bool {
	select {
	case <-o.done:
		return false
	default:
		return true
	}
}

// exitCode waits up to wait for the process to exit and returns its exit code (-1 when
// a signal killed it).
func (o *ownedRep) exitCode(t *testing.T, wait time.Duration) int {
	t.Helper()
	select {
	case <-o.done:
		return o.cmd.ProcessState.ExitCode()
	case <-time.After(wait):
		t.Fatalf("%s still runs after %s:\n%s", o.rep.Name, wait, o.rep.LogTail(40))
		return 0
	}
}

// signal sends sig to the process.
func (o *ownedRep) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, o.cmd.Process.Signal(sig))
}

// evacuateCell calls Evacuate on r's rep with the stack's client certificate.
func (cs *cellStack) evacuateCell(t *testing.T, r *devstack.Rep) {
	t.Helper()
	tlsConf, err := cs.ClientTLS()
	require.NoError(t, err)
	conn, err := grpc.NewClient(r.Address(), grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	require.NoError(t, err)
	defer conn.Close()
	resp, err := repv1.NewRepServiceClient(conn).Evacuate(callCtx(t), &repv1.EvacuateRequest{})
	require.NoError(t, err, "Evacuate on %s", r.Name)
	require.False(t, resp.GetAlreadyEvacuating(), "%s was evacuating before the call", r.Name)
}

// liveCells lists the live cells by id.
func (cs *cellStack) liveCells(t *testing.T) map[string]*modelsv1.CellPresence {
	t.Helper()
	resp, err := cs.bbs.ListCells(callCtx(t), &bbsv1.ListCellsRequest{})
	require.NoError(t, err)
	out := map[string]*modelsv1.CellPresence{}
	for _, c := range resp.GetCells() {
		out[c.GetCellId()] = c
	}
	return out
}

// drainSample is one look at an LRP's instances while a cell drains.
type drainSample struct {
	// at is the time since the drain began.
	at time.Duration
	// serving counts the indices with a RUNNING row (ORDINARY or EVACUATING) whose host
	// port answered.
	serving int
	// evacuating counts the EVACUATING rows, evacuatingServing those that answered.
	evacuating, evacuatingServing int
	// rows describes what the BBS held, and failures the probes that failed.
	rows     string
	failures []string
}

// drainReport sums up the samples of one drain.
type drainReport struct {
	samples int
	// worst is the sample with the fewest serving indices.
	worst drainSample
	// evacuatingSeen counts the samples that saw an EVACUATING row, evacuatingServed
	// those in which an EVACUATING row answered on its host port.
	evacuatingSeen, evacuatingServed int
	// evacuatingIndices are the indices that had an EVACUATING row at some sample.
	evacuatingIndices map[int32]bool
}

// watchDrain samples guid's instances every drainSamplePeriod until rep has exited
// (failing after drainWait) and requires at least minServing indices RUNNING and
// answering on their host port at every sample.
func (cs *cellStack) watchDrain(t *testing.T, guid string, rep *ownedRep, began time.Time, minServing int) drainReport {
	t.Helper()
	report := drainReport{evacuatingIndices: map[int32]bool{}}
	report.worst.serving = -1
	deadline := began.Add(drainWait)
	for rep.running() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not exit within %s of the drain's start:\n%s", rep.rep.Name, drainWait, rep.rep.LogTail(40))
		}
		s := cs.sampleDrain(t, guid, report.evacuatingIndices)
		s.at = time.Since(began)
		report.samples++
		if s.evacuating > 0 {
			report.evacuatingSeen++
		}
		if s.evacuatingServing > 0 {
			report.evacuatingServed++
		}
		if report.worst.serving < 0 || s.serving < report.worst.serving {
			report.worst = s
		}
		require.GreaterOrEqual(t, s.serving, minServing, "at %s into the drain only %d indices of %s were RUNNING and serving; rows:\n%sfailed probes:\n  %s",
			s.at.Round(time.Millisecond), s.serving, guid, s.rows, strings.Join(s.failures, "\n  "))
		select {
		case <-rep.done:
		case <-time.After(drainSamplePeriod):
		}
	}
	t.Logf("drain of %s: %d samples, at least %d indices serving at each (worst at %s), EVACUATING rows in %d samples (indices %v), answering in %d",
		rep.rep.Name, report.samples, report.worst.serving, report.worst.at.Round(time.Millisecond), report.evacuatingSeen, report.evacuatingIndices,
		report.evacuatingServed)
	return report
}

// sampleDrain lists guid's rows and probes every RUNNING ORDINARY or EVACUATING row.
// An index none of whose rows answered is looked at once more: the handover may have
// removed the EVACUATING row and its container between the listing and the probe, while
// its replacement serves.
func (cs *cellStack) sampleDrain(t *testing.T, guid string, evacuatingIndices map[int32]bool) drainSample {
	t.Helper()
	as := cs.actuals(t, guid)
	s := drainSample{rows: describeDrainRows(as)}
	first := probeRunning(t, as)
	serving, failures := first.serving, first.failures
	s.evacuatingServing = first.evacuatingServing
	for _, a := range as {
		if a.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING {
			s.evacuating++
			evacuatingIndices[a.GetIndex()] = true
		}
	}
	if len(failures) > 0 {
		relisted := cs.actuals(t, guid)
		s.rows += "then:\n" + describeDrainRows(relisted)
		var retried []*modelsv1.ActualLRP
		for _, a := range relisted {
			if !serving[a.GetIndex()] {
				retried = append(retried, a)
			}
		}
		again := probeRunning(t, retried)
		for index := range again.serving {
			serving[index] = true
		}
		failures = append(failures, again.failures...)
	}
	s.serving = len(serving)
	s.failures = failures
	return s
}

// probeResult is what probing an LRP's RUNNING rows found.
type probeResult struct {
	// serving holds the indices of which at least one row answered.
	serving map[int32]bool
	// evacuatingServing counts the EVACUATING rows that answered.
	evacuatingServing int
	// failures describes each probe that failed.
	failures []string
}

// probeRunning probes, at once, the host port of every RUNNING ORDINARY or EVACUATING row.
func probeRunning(t *testing.T, as []*modelsv1.ActualLRP) probeResult {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	r := probeResult{serving: map[int32]bool{}}
	client := &http.Client{Timeout: probeTimeout}
	for _, a := range as {
		presence := a.GetPresence()
		if a.GetState() != modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING ||
			(presence != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY && presence != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING) {
			continue
		}
		url := hostURL(t, a, httpPort)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := probeIndex(client, url, a.GetIndex())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.failures = append(r.failures, fmt.Sprintf("index %d %s on %s: %v", a.GetIndex(), presence, a.GetCellId(), err))
				return
			}
			r.serving[a.GetIndex()] = true
			if presence == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING {
				r.evacuatingServing++
			}
		}()
	}
	wg.Wait()
	return r
}

// probeIndex requires url to answer 200 with the page of instance index.
func probeIndex(client *http.Client, url string, index int32) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if got, want := strings.TrimSpace(string(body)), "index="+strconv.Itoa(int(index)); got != want {
		return fmt.Errorf("GET %s: body %q, want %q", url, got, want)
	}
	return nil
}

// requireCellClean waits up to settleWait until r's cell leaves nothing on the host
// (devstack.Stack.CellLeftovers).
func (cs *cellStack) requireCellClean(t *testing.T, r *devstack.Rep) {
	t.Helper()
	var left []string
	require.Eventually(t, func() bool {
		var err error
		left, err = cs.CellLeftovers(t.Context(), r)
		return err == nil && len(left) == 0
	}, settleWait, cellPoll, "%s left on the host:\n  %s", r.CellID(), strings.Join(left, "\n  "))
}

// describeDrainRows lists rows with their presence and instance, for drain failures.
func describeDrainRows(as []*modelsv1.ActualLRP) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "  index %d %s %s cell %q instance %s\n", a.GetIndex(), a.GetPresence(), a.GetState(), a.GetCellId(), a.GetInstanceGuid())
	}
	return b.String()
}
