package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Acceptance 3 of issue 12 (bounded event streams).
const (
	stalledPerAPI = 100
	// maxStalledRSSBytes is the BBS's resident memory it must stay under.
	maxStalledRSSBytes = 300 << 20
	// eventStreamDesires desired LRPs of one instance make twice as many events.
	eventStreamDesires = 10000
	// stalledTimeout bounds waiting for every stalled stream to be disconnected.
	stalledTimeout = 5 * time.Minute
)

// TestStalledEventStreamsAreBounded is issue 12's acceptance 3: 100 SSE and 100 gRPC
// subscribers replay a log of 20,000 realistic events from sequence 0 and never read.
// The BBS stays under 300 MB of resident memory (its peak, VmHWM), every stalled stream
// is disconnected, and readers that stalled, were disconnected and resume from their
// cursor see every event exactly once.
func TestStalledEventStreamsAreBounded(t *testing.T) {
	certs := newCertSet(t)
	cfg := testConfig(t, storetest.NewDatabase(t), certs)
	cfg["log_level"] = "info"
	cfg["max_subscribers_per_identity"] = 2*stalledPerAPI + 10 // the subscribers share one certificate
	cfg["event_write_timeout"] = "10s"
	bbs := startEventBBS(t, cfg, certs)
	total := bbs.desireApps(t, eventStreamDesires)

	// One stalled reader of each API reads on once it was disconnected.
	grpcResumer := bbs.openStalledGRPC(t)
	sseResumer := bbs.openStalledSSE(t)
	for range stalledPerAPI - 1 {
		bbs.openStalledGRPC(t)
		bbs.openStalledSSE(t)
	}

	require.Eventually(t, func() bool {
		m := bbs.metrics(t)
		return m[`drover_bbs_event_subscribers_too_slow_total{api="sse"}`] == stalledPerAPI &&
			m[`drover_bbs_event_subscribers_too_slow_total{api="grpc"}`] >= stalledPerAPI &&
			m["drover_bbs_event_subscribers"] == 0
	}, stalledTimeout, 100*time.Millisecond, "every stalled stream is disconnected")
	peak := vmHWM(t, bbs.Pid())
	t.Logf("BBS peak resident memory with %d stalled gRPC and %d stalled SSE subscribers: %d MiB", stalledPerAPI, stalledPerAPI, peak>>20)
	require.Less(t, peak, int64(maxStalledRSSBytes), "peak resident memory (VmHWM)")

	t.Run("a gRPC reader that stalled resumes with no gap", func(t *testing.T) {
		got := grpcResumer.drain(t) // what was in flight, then UNAVAILABLE
		require.Less(t, len(got), total, "it was disconnected before the end")
		got = bbs.readGRPC(t, got, total)
		requireEverySequenceOnce(t, got, total)
	})
	t.Run("an SSE reader that stalled resumes with no gap", func(t *testing.T) {
		got := sseResumer.drain(t) // what was in flight, then the connection closes
		require.Less(t, len(got), total, "it was disconnected before the end")
		got = bbs.readSSE(t, got, total)
		requireEverySequenceOnce(t, got, total)
	})
}

// TestEventStreamsPerIdentityAreCapped checks max_subscribers_per_identity: gRPC and
// SSE streams of one certificate share the cap, another certificate has its own, and
// a refused stream names the limit.
func TestEventStreamsPerIdentityAreCapped(t *testing.T) {
	certs := newCertSet(t)
	cfg := testConfig(t, storetest.NewDatabase(t), certs)
	cfg["max_subscribers_per_identity"] = 2
	bbs := startEventBBS(t, cfg, certs)

	events := bbsv1.NewEventServiceClient(bbs.conn)
	first, cancelFirst := context.WithCancel(t.Context())
	defer cancelFirst()
	require.NoError(t, admitted(first, t, events, ""))
	resp := bbs.getEvents(t.Context(), t, bbs.clientTLS)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the SSE stream takes the second place")

	err := admitted(t.Context(), t, events, "")
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), `"drover-client" already has 2 open, the limit per identity (max_subscribers_per_identity)`)
	refused := bbs.getEvents(t.Context(), t, bbs.clientTLS)
	body, _ := io.ReadAll(refused.Body)
	require.Equal(t, http.StatusTooManyRequests, refused.StatusCode, string(body))
	require.Contains(t, string(body), `"type":"ResourceExhausted"`)
	require.Contains(t, string(body), "max_subscribers_per_identity")

	cell := bbsv1.NewEventServiceClient(dial(t, bbs.grpcAddr, certs.cell(t, "cell-1")))
	require.NoError(t, admitted(t.Context(), t, cell, "cell-1"), "another certificate has a cap of its own")

	cancelFirst()
	refusedWhileFreeing := 0 // attempts that land before the server has seen the cancel
	require.Eventually(t, func() bool {
		if admitted(t.Context(), t, events, "") == nil {
			return true
		}
		refusedWhileFreeing++
		return false
	}, 10*time.Second, 50*time.Millisecond, "a stream that ended frees its place")
	require.Equal(t, float64(2+refusedWhileFreeing), bbs.metrics(t)["drover_bbs_event_subscribers_refused_total"])
}

// eventBBS is a running bbs binary with a gRPC connection and its addresses.
type eventBBS struct {
	*bbsProcess
	conn                          *grpc.ClientConn
	clientTLS                     *tls.Config
	grpcAddr, httpAddr, debugAddr string
}

func startEventBBS(t *testing.T, cfg map[string]any, certs certSet) *eventBBS {
	t.Helper()
	b := &eventBBS{
		bbsProcess: startBBS(t, "-config", writeConfig(t, cfg)),
		clientTLS:  certs.client(t),
		grpcAddr:   cfg["grpc_address"].(string),
		httpAddr:   cfg["http_address"].(string),
		debugAddr:  cfg["debug_address"].(string),
	}
	b.conn = dial(t, b.grpcAddr, b.clientTLS)
	b.waitServing(t, b.conn, startupTimeout)
	return b
}

// desireApps desires n apps of one instance with realistic definitions (about 3 KiB of
// environment, command and routes each) and returns how many events that made.
func (b *eventBBS) desireApps(t *testing.T, n int) int {
	t.Helper()
	lrps := bbsv1.NewDesiredLRPServiceClient(b.conn)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				_, err := lrps.DesireLRP(context.Background(), &bbsv1.DesireLRPRequest{DesiredLrp: realisticLRP(fmt.Sprintf("app-%05d", i))})
				if err != nil {
					t.Errorf("desire app-%05d: %v", i, err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	require.False(t, t.Failed())
	return 2 * n // desired_lrp_created and actual_lrp_instance_created
}

func realisticLRP(guid string) *modelsv1.DesiredLRP {
	env := make([]*modelsv1.EnvironmentVariable, 0, 24)
	for i := range 24 {
		env = append(env, &modelsv1.EnvironmentVariable{Name: fmt.Sprintf("APP_SETTING_%d", i), Value: strings.Repeat("v", 80)})
	}
	return &modelsv1.DesiredLRP{
		ProcessGuid: guid, Domain: "cf-apps", Instances: 1, Rootfs: "preloaded:cflinuxfs4",
		MemoryMb: 256, DiskMb: 1024, LogGuid: "log-" + guid, Ports: []uint32{8080},
		Annotation: strings.Repeat("a", 400),
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path: "/bin/sh", Args: []string{"-c", "cd /home/vcap/app && exec bundle exec rackup -p $PORT"},
			User: "vcap", Env: env}}},
	}
}

// stalledGRPC is a gRPC subscription from sequence 0 over a connection of its own whose
// flow-control windows stay at 64 KiB, and that is not read.
type stalledGRPC struct {
	stream bbsv1.EventService_SubscribeClient
}

func (b *eventBBS) openStalledGRPC(t *testing.T) *stalledGRPC {
	t.Helper()
	conn, err := grpc.NewClient(b.grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(b.clientTLS)),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	zero := uint64(0)
	stream, err := bbsv1.NewEventServiceClient(conn).Subscribe(t.Context(), &bbsv1.SubscribeRequest{AfterSequence: &zero})
	require.NoError(t, err)
	header, err := stream.Header()
	require.NoError(t, err)
	require.NotNil(t, header, "admitted")
	return &stalledGRPC{stream: stream}
}

// drain reads what the stream still delivers and checks that it ends with UNAVAILABLE,
// the disconnection of a slow subscriber, naming the last sequence sent.
func (s *stalledGRPC) drain(t *testing.T) []uint64 {
	t.Helper()
	var got []uint64
	for {
		resp, err := s.stream.Recv()
		if err != nil {
			require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			require.Equal(t, models.ErrTypeUnavailable, models.FromError(err).Type, "clients retry it")
			require.NotEmpty(t, got)
			require.Contains(t, err.Error(), fmt.Sprintf("the last event sent was %d", got[len(got)-1]))
			return got
		}
		got = append(got, resp.GetEvent().GetSequence())
	}
}

// readGRPC subscribes after the last sequence in got, again whenever the stream ends
// (as the BBS's clients do), until it has total events.
func (b *eventBBS) readGRPC(t *testing.T, got []uint64, total int) []uint64 {
	t.Helper()
	events := bbsv1.NewEventServiceClient(b.conn)
	deadline := time.Now().Add(stalledTimeout)
	for len(got) < total && time.Now().Before(deadline) {
		after := got[len(got)-1]
		ctx, cancel := context.WithCancel(t.Context())
		stream, err := events.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: &after})
		require.NoError(t, err)
		for len(got) < total {
			resp, err := stream.Recv()
			if err != nil {
				require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
				break
			}
			got = append(got, resp.GetEvent().GetSequence())
		}
		cancel()
	}
	return got
}

// stalledSSE is GET /v1/events?after=0 over a TLS connection that is never read.
type stalledSSE struct {
	conn *tls.Conn
}

func (b *eventBBS) openStalledSSE(t *testing.T) *stalledSSE {
	t.Helper()
	conn, err := tls.Dial("tcp", b.httpAddr, b.clientTLS)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = io.WriteString(conn, "GET /v1/events?after=0 HTTP/1.1\r\nHost: bbs\r\n\r\n")
	require.NoError(t, err)
	return &stalledSSE{conn: conn}
}

// drain reads what was in flight until the BBS closes the connection and returns the
// ids of the complete frames.
func (s *stalledSSE) drain(t *testing.T) []uint64 {
	t.Helper()
	require.NoError(t, s.conn.SetReadDeadline(time.Now().Add(time.Minute)))
	raw, err := io.ReadAll(s.conn)
	// The write that timed out may have cut a TLS record: the connection then ends with
	// an error rather than EOF, after everything that was sent whole.
	var netErr net.Error
	require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the BBS closed the connection: %v", err)
	head, body, ok := strings.Cut(string(raw), "\r\n\r\n")
	require.True(t, ok, "no response headers")
	require.Contains(t, head, "200 OK")
	return sseIDs(t, decodeChunked(t, body))
}

// readSSE resumes with Last-Event-ID set to the last id in got, again whenever the
// stream ends (as EventSource does), until it has total events.
func (b *eventBBS) readSSE(t *testing.T, got []uint64, total int) []uint64 {
	t.Helper()
	deadline := time.Now().Add(stalledTimeout)
	for len(got) < total && time.Now().Before(deadline) {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+b.httpAddr+"/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Last-Event-ID", strconv.FormatUint(got[len(got)-1], 10))
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: b.clientTLS}}).Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		got = append(got, readSSEIDs(resp.Body, total-len(got))...)
		cancel()
		resp.Body.Close()
	}
	return got
}

// readSSEIDs reads the ids of up to n complete frames, until the stream ends.
func readSSEIDs(body io.Reader, n int) []uint64 {
	var ids []uint64
	var id uint64
	framed := false
	lines := bufio.NewReaderSize(body, 64<<10)
	for len(ids) < n {
		line, err := lines.ReadString('\n')
		if err != nil {
			break // a line cut short ends the stream
		}
		switch line = strings.TrimSuffix(line, "\n"); {
		case line == "" && framed:
			ids, framed = append(ids, id), false
		case strings.HasPrefix(line, "id: "):
			id, _ = strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			framed = true
		}
	}
	return ids
}

// sseIDs are the ids of the complete frames of an event stream body.
func sseIDs(t *testing.T, body string) []uint64 {
	t.Helper()
	return readSSEIDs(strings.NewReader(body), int(^uint(0)>>1))
}

// decodeChunked undoes HTTP/1.1 chunked encoding, keeping a last chunk cut short.
func decodeChunked(t *testing.T, body string) string {
	t.Helper()
	var out strings.Builder
	for body != "" {
		sizeLine, rest, ok := strings.Cut(body, "\r\n")
		if !ok {
			break
		}
		size, err := strconv.ParseUint(sizeLine, 16, 64)
		require.NoError(t, err, "chunk size %q", sizeLine)
		if size == 0 {
			break
		}
		if uint64(len(rest)) < size {
			out.WriteString(rest)
			break
		}
		out.WriteString(rest[:size])
		body = strings.TrimPrefix(rest[size:], "\r\n")
	}
	return out.String()
}

func requireEverySequenceOnce(t *testing.T, got []uint64, total int) {
	t.Helper()
	require.Len(t, got, total)
	for i, seq := range got {
		if seq != uint64(i+1) {
			t.Fatalf("event %d has sequence %d: every sequence once, in order, expected", i, seq)
		}
	}
}

// admitted subscribes (filtered by cellID, which a cell's certificate must name) and
// waits until the BBS admits the stream (its headers) or refuses it.
func admitted(ctx context.Context, t *testing.T, events bbsv1.EventServiceClient, cellID string) error {
	t.Helper()
	stream, err := events.Subscribe(ctx, &bbsv1.SubscribeRequest{CellId: cellID})
	require.NoError(t, err)
	if header, _ := stream.Header(); header != nil {
		return nil
	}
	_, err = stream.Recv()
	return err
}

// getEvents opens GET /v1/events with tlsConfig and leaves the stream open.
func (b *eventBBS) getEvents(ctx context.Context, t *testing.T, tlsConfig *tls.Config) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+b.httpAddr+"/v1/events", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// metrics reads the drover_bbs_event* samples of the debug server, by name and labels.
func (b *eventBBS) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	samples := map[string]float64{}
	for line := range strings.SplitSeq(get(t, "http://"+b.debugAddr+"/metrics", http.StatusOK), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "drover_bbs_event") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		require.NoError(t, err, line)
		samples[name] = v
	}
	return samples
}

// vmHWM is the peak resident memory of a process, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(status), "\n") {
		if value, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
			require.NoError(t, err, line)
			return kib << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
