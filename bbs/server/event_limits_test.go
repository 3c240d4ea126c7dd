package server_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/events"
	"drover.dev/bbs/models"
	"drover.dev/bbs/server"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// eventServer is the BBS's event service alone on a loopback port over a fresh
// database, with its hub's metrics in a registry of its own.
type eventServer struct {
	db      *store.Postgres
	addr    string
	metrics *prometheus.Registry
}

// newEventServer serves the BBS services with the hub options; extra stream
// interceptors come after the BBS's own.
func newEventServer(t *testing.T, opts events.HubOptions, extra ...grpc.StreamServerInterceptor) *eventServer {
	t.Helper()
	s := &eventServer{db: storetest.NewStore(t), metrics: prometheus.NewRegistry()}
	opts.Registerer = s.metrics
	opts.PollInterval = 50 * time.Millisecond
	hub := events.NewHub(s.db, opts, testLogger())
	ctx, cancel := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-hubDone })

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(append([]grpc.StreamServerInterceptor{server.StreamInterceptor(testLogger())}, extra...)...))
	server.New(server.Deps{DB: s.db, Hub: hub, Logger: testLogger()}).Register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	s.addr = lis.Addr().String()
	return s
}

// dial connects with flow-control windows of 64 KiB (no window growth), so a stream
// that is not read stalls its server once 64 KiB are in flight.
func (s *eventServer) dial(t *testing.T) bbsv1.EventServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return bbsv1.NewEventServiceClient(conn)
}

// metric reads a gauge or counter, summed over its labels, or a labelled one.
func (s *eventServer) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	families, err := s.metrics.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				for _, l := range m.GetLabel() {
					if l.GetName() == labels[i] && l.GetValue() != labels[i+1] {
						continue metrics
					}
				}
			}
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

// desireBigTasks writes n task_created events of about 8 KiB each.
func (s *eventServer) desireBigTasks(t *testing.T, prefix string, n int) {
	t.Helper()
	def := taskDefinition("")
	def.Annotation = strings.Repeat("a", 8<<10)
	for i := range n {
		_, err := s.db.DesireTask(context.Background(), fmt.Sprintf("%s-%d", prefix, i), testDomain, def)
		require.NoError(t, err)
	}
}

func eventuallyT(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, waitFor, 10*time.Millisecond, what)
}

func TestStalledStreamIsDisconnectedAndResumesWithNoGap(t *testing.T) {
	s := newEventServer(t, events.HubOptions{SendTimeout: 200 * time.Millisecond})
	const total = 200 // 1.6 MiB of events: far more than the window
	s.desireBigTasks(t, "big", total)
	client := s.dial(t)

	zero := uint64(0)
	stalled, err := client.Subscribe(t.Context(), &bbsv1.SubscribeRequest{AfterSequence: &zero})
	require.NoError(t, err)
	eventuallyT(t, func() bool {
		return s.metric(t, "drover_bbs_event_subscribers_too_slow_total", "api", "grpc") == 1 &&
			s.metric(t, "drover_bbs_event_subscribers") == 0
	}, "the stream that is not read is disconnected as too slow")

	// It reads again: what was in flight arrives, then UNAVAILABLE naming the cursor.
	var last uint64
	for {
		resp, err := stalled.Recv()
		if err != nil {
			require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			require.Equal(t, models.ErrTypeUnavailable, models.FromError(err).Type, "clients retry it")
			require.Contains(t, err.Error(), fmt.Sprintf("the last event sent was %d", last))
			break
		}
		require.Equal(t, last+1, resp.GetEvent().GetSequence(), "no gap")
		last = resp.GetEvent().GetSequence()
	}
	require.Less(t, last, uint64(total), "it was disconnected before the end")

	resumed, err := client.Subscribe(t.Context(), &bbsv1.SubscribeRequest{AfterSequence: &last})
	require.NoError(t, err)
	for last < total {
		resp, err := resumed.Recv()
		require.NoError(t, err)
		require.Equal(t, last+1, resp.GetEvent().GetSequence(), "no gap, no repeat")
		last = resp.GetEvent().GetSequence()
	}
}

// openStream subscribes and waits until the BBS admitted the stream (its headers).
func openStream(ctx context.Context, t *testing.T, client bbsv1.EventServiceClient) (bbsv1.EventService_SubscribeClient, error) {
	t.Helper()
	stream, err := client.Subscribe(ctx, &bbsv1.SubscribeRequest{})
	require.NoError(t, err)
	if header, _ := stream.Header(); header != nil {
		return stream, nil
	}
	_, err = stream.Recv()
	return nil, err
}

func TestStreamsOverTheIdentityCapAreRefused(t *testing.T) {
	s := newEventServer(t, events.HubOptions{MaxSubscribersPerIdentity: 2})
	client := s.dial(t)
	first, cancelFirst := context.WithCancel(t.Context())
	_, err := openStream(first, t, client)
	require.NoError(t, err)
	_, err = openStream(t.Context(), t, client)
	require.NoError(t, err)

	_, err = openStream(t.Context(), t, client)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), "the anonymous caller already has 2 open, the limit per identity (max_subscribers_per_identity)")
	require.Equal(t, 1.0, s.metric(t, "drover_bbs_event_subscribers_refused_total"))

	cancelFirst()
	eventuallyT(t, func() bool {
		stream, err := openStream(t.Context(), t, client)
		return err == nil && stream != nil
	}, "a stream that ended frees its place")
}

func TestOnlyTheInProcessListenerTrustsAForwardedIdentity(t *testing.T) {
	forwarded := func(identity string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), events.IdentityMetadataKey, identity)
	}
	t.Run("trusted", func(t *testing.T) {
		s := newEventServer(t, events.HubOptions{MaxSubscribersPerIdentity: 1}, server.TrustForwardedIdentity())
		client := s.dial(t)
		for _, identity := range []string{"alice", "bob"} {
			_, err := openStream(forwarded(identity), t, client)
			require.NoError(t, err, "each forwarded identity has its own cap")
		}
		_, err := openStream(forwarded("alice"), t, client)
		require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		require.Contains(t, err.Error(), `"alice" already has 1 open`)
		_, err = openStream(t.Context(), t, client)
		require.NoError(t, err, "without the metadata: the anonymous caller")
	})
	t.Run("ignored elsewhere", func(t *testing.T) {
		s := newEventServer(t, events.HubOptions{MaxSubscribersPerIdentity: 1})
		client := s.dial(t)
		_, err := openStream(forwarded("alice"), t, client)
		require.NoError(t, err)
		_, err = openStream(forwarded("bob"), t, client)
		require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		require.Contains(t, err.Error(), "the anonymous caller", "the metadata named no one")
	})
}
