package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/bbs/bbstest"
	"drover.dev/bbs/client"
	"drover.dev/lib/proctest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/route-emitter/config"
	"drover.dev/route-emitter/routingtable"
)

// This file holds the helpers of the binary-level tests of modes, lock, NATS TLS,
// metrics and BBS outages: certificates, a BBS on a chosen address, the emitter
// binary with a base configuration, a router.register recorder, and readers of the
// emitter's JSON logs and NATS connections.

// certFiles names the certificate and key of name (bbs, client, route-emitter, nats)
// under one dev CA.
type certFiles = bbstest.Certs

// testCerts writes a dev CA with bbs and client certificates plus route-emitter and
// nats server certificates for 127.0.0.1.
func testCerts(t *testing.T) certFiles { return bbstest.NewCerts(t, "route-emitter", "nats") }

// bbsClient connects to the BBS at addr with the dev client certificate (CN
// drover-client: no "cell:" prefix, so it may act for any cell).
func bbsClient(t *testing.T, addr string, certs certFiles) *client.Client {
	t.Helper()
	clientTLS, err := certs("client").Client()
	require.NoError(t, err)
	c, err := client.New(addr, clientTLS)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// startBBSAt runs the bbs binary on a fresh database (Postgres from
// scripts/postgres.sh start) serving gRPC on addr, and waits until it is SERVING.
func startBBSAt(t *testing.T, addr string, certs certFiles) *client.Client {
	t.Helper()
	return bbstest.Start(t, filepath.Join(binDir, "bbs"), addr, certs)
}

// emitterUnderTest is a running route-emitter binary and its configuration.
type emitterUnderTest struct {
	*proctest.Process
	config map[string]any
}

// startEmitter runs the route-emitter binary with a base configuration (BBS at
// bbsAddr with the route-emitter certificate, NATS at natsURL, debug logs, fresh
// ports and state file) overridden by overrides.
func startEmitter(t *testing.T, name, bbsAddr, natsURL string, certs certFiles, overrides map[string]any) *emitterUnderTest {
	t.Helper()
	cfg := map[string]any{
		"listen_address": proctest.ReserveAddress(t), "debug_address": proctest.ReserveAddress(t),
		"bbs_address": bbsAddr, "tls": certs("route-emitter"), "nats_addresses": []string{natsURL},
		"nats_username": natsEmitterUser, "nats_password_file": natsPasswordFile(t, natsEmitterPassword),
		"state_file": filepath.Join(t.TempDir(), "state.json"), "log_level": "debug",
		"lock_owner": name, "lock_retry_interval": "100ms",
	}
	maps.Copy(cfg, overrides)
	p := proctest.Start(t, name, filepath.Join(binDir, "route-emitter"), "-config", proctest.WriteJSON(t, name+".json", cfg))
	return &emitterUnderTest{Process: p, config: cfg}
}

// natsPasswordFile writes a NATS password to a file of its own (nats_password_file).
func natsPasswordFile(t *testing.T, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.password")
	require.NoError(t, os.WriteFile(path, []byte(password+"\n"), 0o600))
	return path
}

// debugAddress is where the emitter serves /metrics.
func (e *emitterUnderTest) debugAddress() string { return e.config["debug_address"].(string) }

// running fails the test when the process has exited.
func (e *emitterUnderTest) running(t *testing.T) {
	t.Helper()
	select {
	case <-e.Exited():
		t.Fatalf("route-emitter exited: %v\n%s", e.Err(), e.Output())
	default:
	}
}

// waitStarted waits for "route-emitter-started" (every member ready: in global mode
// the lock is held).
func (e *emitterUnderTest) waitStarted(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.running(t)
		return strings.Contains(e.Output(), `"msg":"route-emitter-started"`)
	}, waitTimeout, pollEvery, "route-emitter started\n%s", e.Output())
}

// logEntry is one JSON log line of the emitter.
type logEntry map[string]any

// str is the string value of key ("" when absent or not a string).
func (l logEntry) str(key string) string {
	s, _ := l[key].(string)
	return s
}

// logs parses the emitter's JSON log lines (other lines are skipped).
func (e *emitterUnderTest) logs() []logEntry {
	var entries []logEntry
	for _, line := range strings.Split(e.Output(), "\n") {
		var l logEntry
		if json.Unmarshal([]byte(line), &l) == nil {
			entries = append(entries, l)
		}
	}
	return entries
}

// countLogs counts the log lines that match.
func (e *emitterUnderTest) countLogs(match func(logEntry) bool) int {
	n := 0
	for _, l := range e.logs() {
		if match(l) {
			n++
		}
	}
	return n
}

// withMessage matches log lines with message msg.
func withMessage(msg string) func(logEntry) bool {
	return func(l logEntry) bool { return l.str("msg") == msg }
}

// metrics reads the emitter's /metrics as sample name → value (label-free samples
// and histogram _count / _sum lines).
func (e *emitterUnderTest) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + e.debugAddress() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	samples := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 || strings.HasPrefix(line, "#") || strings.Contains(fields[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(fields[1], 64); err == nil {
			samples[fields[0]] = v
		}
	}
	return samples
}

// registerRecorder keeps every router.register a test subscriber received.
type registerRecorder struct {
	mu        sync.Mutex
	registers []routingtable.RegistryMessage
}

// recordRegisters subscribes to router.register on natsURL as natsRouterUser (opts add
// e.g. TLS).
func recordRegisters(t *testing.T, natsURL string, opts ...nats.Option) *registerRecorder {
	t.Helper()
	conn, err := nats.Connect(natsURL, append([]nats.Option{nats.Name("test-subscriber"), nats.UserInfo(natsRouterUser, natsRouterPassword)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	r := &registerRecorder{}
	_, err = conn.Subscribe("router.register", func(m *nats.Msg) {
		var msg routingtable.RegistryMessage
		if json.Unmarshal(m.Data, &msg) == nil {
			r.mu.Lock()
			r.registers = append(r.registers, msg)
			r.mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.NoError(t, conn.Flush())
	return r
}

// count is how many registers for the instance GUID arrived.
func (r *registerRecorder) count(instanceGUID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.registers {
		if m.PrivateInstanceID == instanceGUID {
			n++
		}
	}
	return n
}

// last is the latest register for the instance GUID.
func (r *registerRecorder) last(instanceGUID string) (routingtable.RegistryMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.registers) - 1; i >= 0; i-- {
		if r.registers[i].PrivateInstanceID == instanceGUID {
			return r.registers[i], true
		}
	}
	return routingtable.RegistryMessage{}, false
}

// waitCount waits until at least n registers for the instance GUID arrived.
func (r *registerRecorder) waitCount(t *testing.T, e *emitterUnderTest, instanceGUID string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.running(t)
		return r.count(instanceGUID) >= n
	}, waitTimeout, pollEvery, "%d router.register for %s\n%s", n, instanceGUID, e.Output())
}

// desireRoutedLRP desires an LRP in the cf-apps domain whose container port 8080 is
// routed from hostname.
func desireRoutedLRP(t *testing.T, bbs *client.Client, processGUID, hostname string, instances int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := bbs.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: "cf-apps", TtlSeconds: 3600})
	require.NoError(t, err)
	routes, err := structpb.NewValue([]any{map[string]any{"hostnames": []any{hostname}, "port": float64(8080)}})
	require.NoError(t, err)
	_, err = bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: &modelsv1.DesiredLRP{
		ProcessGuid: processGUID, Domain: "cf-apps", Instances: instances, Rootfs: "preloaded:busybox", MemoryMb: 32, DiskMb: 32,
		LogGuid: processGUID + "-log", Ports: []uint32{8080}, Routes: map[string]*structpb.Value{"cf-router": routes},
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "root"}}},
	}})
	require.NoError(t, err)
}

// instance is one ActualLRP the test makes RUNNING.
type instance struct {
	processGUID string
	index       int32
	cellID      string
	guid        string // instance GUID, also the register's private_instance_id
	hostPort    uint32
}

// address is the cell address the instance runs at (one per cell).
func (i instance) address() string { return "10.0.0." + strings.TrimPrefix(i.cellID, "cell-") }

// run claims and starts the instance through the BBS API.
func (i instance) run(t *testing.T, bbs *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: i.guid, CellId: i.cellID}
	_, err := bbs.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: i.processGUID, Index: i.index, ActualLrpInstanceKey: ik})
	require.NoError(t, err, "claim %s/%d on %s", i.processGUID, i.index, i.cellID)
	_, err = bbs.StartActualLRP(ctx, &bbsv1.StartActualLRPRequest{
		ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: i.processGUID, Index: i.index, Domain: "cf-apps"}, ActualLrpInstanceKey: ik,
		ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{Address: i.address(), Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: i.hostPort}}},
	})
	require.NoError(t, err, "start %s/%d on %s", i.processGUID, i.index, i.cellID)
}

// routeEmitterLocks lists the holders of the route_emitter lock.
func routeEmitterLocks(t *testing.T, bbs *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := bbs.ListLocks(ctx, &bbsv1.ListLocksRequest{})
	require.NoError(t, err)
	var owners []string
	for _, l := range resp.GetLocks() {
		if l.GetKey() == config.LockKey && time.Unix(0, l.GetExpiresAt()).After(time.Now()) {
			owners = append(owners, l.GetOwner())
		}
	}
	return owners
}

// emitterConnections returns the NATS connections named "route-emitter" by client id.
func emitterConnections(t *testing.T, ns *server.Server) map[uint64]*server.ConnInfo {
	t.Helper()
	connz, err := ns.Connz(&server.ConnzOptions{})
	require.NoError(t, err)
	conns := map[uint64]*server.ConnInfo{}
	for _, c := range connz.Conns {
		if c.Name == "route-emitter" {
			conns[c.Cid] = c
		}
	}
	return conns
}

// publishedBy is how many messages the NATS connection cid has published.
func publishedBy(t *testing.T, ns *server.Server, cid uint64) int64 {
	t.Helper()
	c, ok := emitterConnections(t, ns)[cid]
	require.True(t, ok, "nats connection %d is gone", cid)
	return c.InMsgs
}

// String is a short label for failure messages.
func (i instance) String() string { return fmt.Sprintf("%s/%d@%s", i.processGUID, i.index, i.cellID) }
