package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"drover.dev/lib/proctest"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

const (
	waitTimeout = 30 * time.Second
	pollEvery   = 20 * time.Millisecond
)

// stack is a fake BBS and one fake rep, with an auctioneer configuration pointing at them.
type stack struct {
	bbs    *fakeBBS
	rep    *fakeRep
	config map[string]any
	client *grpc.ClientConn
}

func newStack(t *testing.T, owner string) *stack {
	t.Helper()
	c := newCerts(t)
	s := &stack{bbs: newFakeBBS(), rep: &fakeRep{cellID: "cell-1"}}
	bbsAddr := serve(t, c.serverTLS(t), s.bbs.register)
	repAddr := serve(t, c.serverTLS(t), func(srv *grpc.Server) { repv1.RegisterRepServiceServer(srv, s.rep) })
	s.bbs.cells = []*modelsv1.CellPresence{{CellId: "cell-1", RepAddress: repAddr, Zone: "z1"}}
	s.config = map[string]any{
		"listen_address":      proctest.ReserveAddress(t),
		"debug_address":       proctest.ReserveAddress(t),
		"bbs_address":         bbsAddr,
		"tls":                 c.files("bbs"),
		"lock_ttl":            "2s",
		"lock_retry_interval": "100ms",
		"lock_owner":          owner,
		"cell_state_timeout":  "2s",
		"log_level":           "debug",
	}
	conn, err := grpc.NewClient(s.config["listen_address"].(string), grpc.WithTransportCredentials(credentials.NewTLS(c.clientTLS(t))))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	s.client = conn
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestAuctioneerProcess runs the binary against a fake BBS and rep over mTLS: passive
// while another owner holds the lock, active once it is free, auctions work, and exits
// non-zero when the lock is taken away.
func TestAuctioneerProcess(t *testing.T) {
	s := newStack(t, "auctioneer-a")
	s.bbs.setHolder("someone-else")
	p := startAuctioneer(t, s.config)
	api := auctioneerv1.NewAuctioneerServiceClient(s.client)

	t.Run("passive while another owner holds the lock", func(t *testing.T) {
		require.Eventually(t, func() bool { _, n := s.bbs.lockState("auctioneer-a"); return n >= 3 }, waitTimeout, pollEvery)
		require.Eventually(t, func() bool { return healthStatus(s.client) == healthpb.HealthCheckResponse_NOT_SERVING }, waitTimeout, pollEvery)
		_, err := api.RequestLRPAuctions(ctxT(t), &auctioneerv1.RequestLRPAuctionsRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err))
	})

	t.Run("active and SERVING once the lock is free", func(t *testing.T) {
		s.bbs.setHolder("")
		require.Eventually(t, func() bool { return healthStatus(s.client) == healthpb.HealthCheckResponse_SERVING }, waitTimeout, pollEvery)
		holder, _ := s.bbs.lockState("auctioneer-a")
		require.Equal(t, "auctioneer-a", holder)
	})

	t.Run("auctions work onto the cell and reports failures", func(t *testing.T) {
		_, err := api.RequestLRPAuctions(ctxT(t), &auctioneerv1.RequestLRPAuctionsRequest{Requests: []*modelsv1.LRPStartRequest{
			{ProcessGuid: "web", Domain: "apps", Indices: []int32{0, 1}, Rootfs: "preloaded:busybox", Resource: &modelsv1.Resource{MemoryMb: 128}},
			{ProcessGuid: "huge", Domain: "apps", Indices: []int32{0}, Rootfs: "preloaded:busybox", Resource: &modelsv1.Resource{MemoryMb: 8192}},
			{ProcessGuid: "", Domain: "apps", Indices: []int32{0}, Rootfs: "preloaded:busybox"},
		}})
		require.NoError(t, err)
		_, err = api.RequestTaskAuctions(ctxT(t), &auctioneerv1.RequestTaskAuctionsRequest{Requests: []*modelsv1.TaskStartRequest{
			{TaskGuid: "nope-task", Domain: "tasks", Rootfs: "preloaded:nope"},
		}})
		require.NoError(t, err)

		require.Eventually(t, func() bool { return len(s.rep.work()) == 2 }, waitTimeout, pollEvery)
		require.ElementsMatch(t, []string{"web.0", "web.1"}, s.rep.work())
		require.Eventually(t, func() bool { failed, rejected := s.bbs.failures(); return len(failed) == 1 && len(rejected) == 1 }, waitTimeout, pollEvery)
		failed, rejected := s.bbs.failures()
		require.Equal(t, "insufficient resources: memory (needs 8192 MB, largest free 1024 MB)", failed["huge.0"])
		require.Equal(t, "found no compatible cell for required rootfs", rejected["nope-task"])
	})

	t.Run("metrics count the auctions", func(t *testing.T) {
		resp, err := http.Get("http://" + s.config["debug_address"].(string) + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Contains(t, string(body), "drover_auctioneer_lrp_auctions_started_total 2")
		require.Contains(t, string(body), "drover_auctioneer_lrp_auctions_failed_total 1")
		require.Contains(t, string(body), "drover_auctioneer_task_auctions_failed_total 1")
	})

	t.Run("exits non-zero when the lock is lost", func(t *testing.T) {
		s.bbs.setHolder("usurper")
		require.Equal(t, exitFatal, p.WaitExit(t, waitTimeout))
		require.True(t, strings.Contains(p.Output(), `"msg":"lock-lost"`), "logs lock-lost")
	})
}

func TestAuctioneerReleasesTheLockOnSIGTERM(t *testing.T) {
	s := newStack(t, "auctioneer-b")
	p := startAuctioneer(t, s.config)
	require.Eventually(t, func() bool { return healthStatus(s.client) == healthpb.HealthCheckResponse_SERVING }, waitTimeout, pollEvery)
	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, exitOK, p.WaitExit(t, waitTimeout))
	holder, _ := s.bbs.lockState("auctioneer-b")
	require.Empty(t, holder, "the lock is released for a passive instance")
}

func TestAuctioneerRefusesABadConfig(t *testing.T) {
	p := startAuctioneer(t, map[string]any{"lock_ttl": "1s"})
	require.Equal(t, exitFatal, p.WaitExit(t, waitTimeout))
	require.Contains(t, p.Output(), "lock_retry_interval: must be shorter than lock_ttl")
}
