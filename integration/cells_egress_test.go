package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"drover.dev/executor/firewall"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// egressTarget is a test host of the test's own: a network namespace routed from the
// host through a veth, 10.236.N.2. It is the only address the egress scenarios reach.
type egressTarget struct {
	t  *testing.T
	ns string
	ip string
}

func newEgressTarget(t *testing.T) *egressTarget {
	t.Helper()
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	id := hex.EncodeToString(b[:3])
	octet := int(b[3]%250) + 2
	et := &egressTarget{t: t, ns: "egt" + id, ip: fmt.Sprintf("10.236.%d.2", octet)}
	host := "egt" + id + "h"
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", et.ns).Run()
		_ = exec.Command("ip", "link", "del", host).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", et.ns},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", et.ns},
		{"addr", "add", fmt.Sprintf("10.236.%d.1/24", octet), "dev", host},
		{"link", "set", host, "up"},
		{"-n", et.ns, "addr", "add", et.ip + "/24", "dev", "eth0"},
		{"-n", et.ns, "link", "set", "eth0", "up"},
		{"-n", et.ns, "link", "set", "lo", "up"},
		{"-n", et.ns, "route", "add", "default", "via", fmt.Sprintf("10.236.%d.1", octet)},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
	}
	return et
}

// serve answers "ok" to every tcp connection on port, until cleanup.
func (et *egressTarget) serve(port int) {
	t := et.t
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // unlocked only once back in the original namespace
		orig, err := netns.Get()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer orig.Close()
		h, err := netns.GetFromName(et.ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			done <- result{err: err}
			return
		}
		l, err := net.Listen("tcp4", fmt.Sprintf("%s:%d", et.ip, port))
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{l, err}
	}()
	res := <-done
	require.NoError(t, res.err)
	t.Cleanup(func() { res.l.Close() })
	go func() {
		for {
			c, err := res.l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("ok\n"))
			c.Close()
		}
	}()
}

// kernelLogHas reports whether the kernel log holds s.
func kernelLogHas(t *testing.T, s string) bool {
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	require.NoError(t, err)
	buf := make([]byte, size)
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	require.NoError(t, err)
	return bytes.Contains(buf[:n], []byte(s))
}

// reach is a shell test that ip:port answers "ok"; refused is one that it does not.
func reach(ip string, port int) string {
	return fmt.Sprintf("nc -w 5 %s %d </dev/null | grep -q ok", ip, port)
}
func refused(ip string, port int) string { return "! " + reach(ip, port) }

func TestCellsEgress(t *testing.T) {
	target := newEgressTarget(t)
	for _, p := range []int{8201, 8202, 8203} {
		target.serve(p)
	}
	cs := newCellStack(t, 1, func(_ int, c *repconfig.Config) {
		c.Executor.DefaultEgressRules = []*modelsv1.EgressRule{{Protocol: "tcp", Destinations: []string{target.ip}, Ports: []uint32{8203}}}
	})
	suffix := func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	typ, code := int32(8), int32(0)

	t.Run("a task's rules and the cell's defaults", func(t *testing.T) {
		guid := "egress-rules-" + suffix()
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action: shAction(strings.Join([]string{
				reach(target.ip, 8201), refused(target.ip, 8202), reach(target.ip, 8203), "ping -c 1 -W 5 " + target.ip,
			}, " && ")),
			EgressRules: []*modelsv1.EgressRule{
				{Protocol: "icmp", Destinations: []string{target.ip}, IcmpInfo: &modelsv1.ICMPInfo{Type: &typ, Code: &code}},
				{Protocol: "tcp", Destinations: []string{target.ip}, Ports: []uint32{8201}, Log: true},
			},
		})
		task := cs.waitTaskCompleted(t, guid)
		require.False(t, task.GetFailed(), task.GetFailureReason())
		require.Eventually(t, func() bool { return kernelLogHas(t, guid+" IN=") }, settleWait, cellPoll,
			"no kernel log line prefixed with the task guid")
	})

	t.Run("no rules reach only the defaults", func(t *testing.T) {
		guid := "egress-none-" + suffix()
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action: shAction(strings.Join([]string{
				refused(target.ip, 8201), refused(target.ip, 8202), reach(target.ip, 8203), "! ping -c 1 -W 2 " + target.ip,
			}, " && ")),
		})
		task := cs.waitTaskCompleted(t, guid)
		require.False(t, task.GetFailed(), task.GetFailureReason())
	})

	t.Run("a rep restart keeps the rules; deleting the container leaves none", func(t *testing.T) {
		guid := "egress-restart-" + suffix()
		// The task waits for the target to open 8204 (after the restart), then probes.
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action: shAction(fmt.Sprintf("until %s; do sleep 0.2; done; %s && %s", reach(target.ip, 8204), reach(target.ip, 8201), refused(target.ip, 8202))),
			EgressRules: []*modelsv1.EgressRule{
				{Protocol: "tcp", Destinations: []string{target.ip}, Ports: []uint32{8201, 8204}},
			},
			Env: []*modelsv1.EnvironmentVariable{{Name: "DROVER_TEST_TASK", Value: guid}},
		})
		require.Eventually(t, func() bool { return len(envPids("DROVER_TEST_TASK="+guid, "")) > 0 }, runningWait, cellPoll,
			"the task's process never showed")
		rep := cs.Reps[0]
		table := firewall.TableName(rep.Config.Executor.ContainerdNamespace)
		chain := "nftables chain inet " + table + " " + firewall.ChainName(guid)
		require.Eventually(t, func() bool {
			left, err := firewall.Leftovers(table)
			require.NoError(t, err)
			return slices.Contains(left, chain)
		}, runningWait, cellPoll, "the task's container never got its firewall chain")

		require.NoError(t, rep.Restart(ctxFor(t, runningWait)))
		left, err := firewall.Leftovers(table)
		require.NoError(t, err)
		require.Contains(t, left, chain, "the restarted rep keeps the task's chain")
		target.serve(8204)
		task := cs.waitTaskCompleted(t, guid)
		require.False(t, task.GetFailed(), task.GetFailureReason())

		require.Eventually(t, func() bool {
			left, err := firewall.Leftovers(table)
			require.NoError(t, err)
			return len(left) == 0
		}, settleWait, cellPoll, "the completed task's container left its firewall chain")
	})
}
