package emitter

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"

	"drover.dev/route-emitter/routingtable"
)

const (
	waitFor   = 10 * time.Second
	pollEvery = 10 * time.Millisecond
)

// startNATS runs an embedded NATS server on an OS-chosen port.
func startNATS(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	s, err := server.NewServer(opts)
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(waitFor), "nats server ready")
	t.Cleanup(s.Shutdown)
	return s
}

// recorder subscribes to subjects and keeps what arrives.
type recorder struct {
	mu   sync.Mutex
	msgs map[string][][]byte
	conn *nats.Conn
}

func record(t *testing.T, s *server.Server, subjects ...string) *recorder {
	t.Helper()
	conn, err := nats.Connect(s.ClientURL())
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	r := &recorder{msgs: map[string][][]byte{}, conn: conn}
	for _, subj := range subjects {
		_, err := conn.Subscribe(subj, func(m *nats.Msg) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.msgs[m.Subject] = append(r.msgs[m.Subject], m.Data)
		})
		require.NoError(t, err)
	}
	require.NoError(t, conn.Flush())
	return r
}

func (r *recorder) count(subject string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs[subject])
}

func (r *recorder) messages(subject string) []routingtable.RegistryMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []routingtable.RegistryMessage
	for _, data := range r.msgs[subject] {
		var m routingtable.RegistryMessage
		if json.Unmarshal(data, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func testOptions(s *server.Server) Options {
	return Options{
		Addresses: []string{s.ClientURL()}, RegisterInterval: time.Hour, GreetInterval: 20 * time.Millisecond,
		JitterFactor: 0.2, MaxMessagesPerSecond: 1000, UnregistrationInterval: time.Hour, UnregistrationSendCount: 3,
	}
}

// run starts e and stops it at cleanup.
func run(t *testing.T, e *Emitter) ifrit.Process {
	t.Helper()
	p := ifrit.Invoke(ifrit.RunFunc(e.Run))
	t.Cleanup(func() {
		p.Signal(os.Interrupt)
		<-p.Wait()
	})
	return p
}

func msg(uri string) routingtable.RegistryMessage {
	return routingtable.RegistryMessage{Host: "10.0.0.1", Port: 61000, URIs: []string{uri}, PrivateInstanceID: "ig"}
}

func TestGreetsUntilAnsweredAndNeverExits(t *testing.T) {
	s := startNATS(t, nil)
	rec := record(t, s, SubjectGreet)
	p := run(t, New(testOptions(s)))
	require.Eventually(t, func() bool { return rec.count(SubjectGreet) >= 5 }, waitFor, pollEvery, "greets repeat")
	select {
	case err := <-p.Wait():
		t.Fatalf("emitter exited without a router: %v", err)
	default:
	}
}

func TestGreetReplySetsTheIntervalAndStopsGreeting(t *testing.T) {
	s := startNATS(t, nil)
	router := record(t, s, SubjectRegister)
	var greets sync.WaitGroup
	greets.Add(1)
	var once sync.Once
	_, err := router.conn.Subscribe(SubjectGreet, func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"id":"0-x","hosts":["127.0.0.1"],"minimumRegisterIntervalInSeconds":1,"pruneThresholdInSeconds":15}`))
		once.Do(greets.Done)
	})
	require.NoError(t, err)
	require.NoError(t, router.conn.Flush())

	e := New(testOptions(s))
	e.SetSource(func() []routingtable.RegistryMessage { return []routingtable.RegistryMessage{msg("a.example.com")} })
	run(t, e)
	greets.Wait()
	require.Eventually(t, func() bool { return e.RegisterIntervalSeconds() == 1 }, waitFor, pollEvery)
	// The register interval (1 h in the options) became 1 s: re-registrations arrive.
	require.Eventually(t, func() bool { return router.count(SubjectRegister) >= 2 }, waitFor, pollEvery, "periodic re-registration")
	assert.Equal(t, []string{"a.example.com"}, router.messages(SubjectRegister)[0].URIs)
}

func TestRouterStartSetsIntervalAndReRegisters(t *testing.T) {
	s := startNATS(t, nil)
	router := record(t, s, SubjectRegister)
	e := New(testOptions(s))
	e.SetSource(func() []routingtable.RegistryMessage {
		return []routingtable.RegistryMessage{msg("a.example.com"), msg("b.example.com")}
	})
	run(t, e)
	require.Eventually(t, e.Connected, waitFor, pollEvery)
	require.NoError(t, router.conn.Publish(SubjectStart, []byte(`{"id":"1-y","minimumRegisterIntervalInSeconds":7,"pruneThresholdInSeconds":120}`)))
	require.Eventually(t, func() bool { return router.count(SubjectRegister) == 2 }, waitFor, pollEvery, "start ⇒ re-register everything")
	assert.Equal(t, int32(7), e.RegisterIntervalSeconds())
	require.NoError(t, router.conn.Publish(SubjectStart, []byte(`{"id":"2-z","minimumRegisterIntervalInSeconds":3}`)))
	require.Eventually(t, func() bool { return router.count(SubjectRegister) == 4 && e.RegisterIntervalSeconds() == 3 },
		waitFor, pollEvery, "the last start wins")
}

func TestStandbyBroadcastsNothing(t *testing.T) {
	s := startNATS(t, nil)
	router := record(t, s, SubjectRegister, SubjectGreet)
	e := New(testOptions(s))
	run(t, e)
	require.Eventually(t, e.Connected, waitFor, pollEvery)
	e.RequestBroadcast()
	require.NoError(t, router.conn.Publish(SubjectStart, []byte(`{"minimumRegisterIntervalInSeconds":1}`)))
	require.Eventually(t, func() bool { return e.RegisterIntervalSeconds() == 1 }, waitFor, pollEvery)
	// Flush a round trip through the server after the start's jitter could have fired.
	e.RequestBroadcast()
	require.NoError(t, router.conn.Flush())
	assert.Zero(t, router.count(SubjectRegister), "no source, no registrations")
}

func TestEmitPublishesOneMessagePerURIAndCachesUnregisters(t *testing.T) {
	s := startNATS(t, nil)
	router := record(t, s, SubjectRegister, SubjectUnregister)
	opts := testOptions(s)
	opts.UnregistrationInterval = 20 * time.Millisecond
	e := New(opts)
	run(t, e)
	e.Emit(routingtable.Messages{
		Registrations:   []routingtable.RegistryMessage{msg("a.example.com"), msg("b.example.com")},
		Unregistrations: []routingtable.RegistryMessage{msg("c.example.com")},
	})
	require.Eventually(t, func() bool { return router.count(SubjectRegister) == 2 }, waitFor, pollEvery)
	// Sent once at once, then re-sent send_count (3) times, then dropped.
	require.Eventually(t, func() bool { return e.cache.len() == 0 && router.count(SubjectUnregister) == 4 }, waitFor, pollEvery,
		"unregisters: %d", router.count(SubjectUnregister))
	assert.Equal(t, []string{"c.example.com"}, router.messages(SubjectUnregister)[3].URIs)
}

func TestRegisterCancelsCachedUnregister(t *testing.T) {
	c := newUnregistrationCache(5)
	a, b := msg("a.example.com"), msg("b.example.com")
	c.add([]routingtable.RegistryMessage{a, b})
	// A register with other ignored fields (route service URL, tags) still cancels.
	again := a
	again.RouteServiceURL = "https://rs.example.com"
	again.Tags = map[string]string{"x": "y"}
	c.cancel([]routingtable.RegistryMessage{again})
	assert.Equal(t, []routingtable.RegistryMessage{b}, c.due())
	// A different protocol is another identity.
	other := b
	other.Protocol = "http2"
	c.cancel([]routingtable.RegistryMessage{other})
	assert.Equal(t, 1, c.len())
}

func TestUserPasswordAuth(t *testing.T) {
	s := startNATS(t, &server.Options{Username: "emitter", Password: "secret"})
	opts := testOptions(s)
	opts.Username, opts.Password = "emitter", "secret"
	e := New(opts)
	run(t, e)
	require.Eventually(t, e.Connected, waitFor, pollEvery)
}

func TestKeepsRunningWhileNATSIsDownAndReRegistersAfterReconnect(t *testing.T) {
	s := startNATS(t, nil)
	e := New(testOptions(s))
	e.SetSource(func() []routingtable.RegistryMessage { return []routingtable.RegistryMessage{msg("a.example.com")} })
	run(t, e)
	require.Eventually(t, e.Connected, waitFor, pollEvery)

	port := s.Addr().(*net.TCPAddr).Port
	s.Shutdown()
	require.Eventually(t, func() bool { return !e.Connected() }, waitFor, pollEvery)
	s2 := startNATSOnPort(t, port)
	router := record(t, s2, SubjectRegister)
	require.Eventually(t, func() bool { return router.count(SubjectRegister) >= 1 }, waitFor, pollEvery, "re-registered after the reconnect")
}

// startNATSOnPort restarts NATS on a known port (the one the emitter reconnects to).
func startNATSOnPort(t *testing.T, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(waitFor), "nats server ready")
	t.Cleanup(s.Shutdown)
	return s
}

// published is one message a fake publish saw, at the fake clock's time.
type published struct {
	subject, uri string
	at           time.Time
}

// fakeClock advances only when slept on; onSleep runs (unlocked) at every sleep.
type fakeClock struct {
	now     time.Time
	onSleep func()
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(d time.Duration) {
	c.now = c.now.Add(d)
	if c.onSleep != nil {
		c.onSleep()
	}
}

// fakeSender is a sender on a fake clock that records what it publishes.
func fakeSender(perSecond int) (*sender, *fakeClock, *[]published) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	var out []published
	s := newSender(func(subject string, m routingtable.RegistryMessage) {
		out = append(out, published{subject, m.URIs[0], clock.now})
	}, newUnregistrationCache(3), perSecond, clock, nil, slog.New(slog.DiscardHandler))
	return s, clock, &out
}

func msgs(n int, prefix string) []routingtable.RegistryMessage {
	out := make([]routingtable.RegistryMessage, n)
	for i := range out {
		out[i] = msg(fmt.Sprintf("%s%d.example.com", prefix, i))
	}
	return out
}

// maxInWindow is the most messages published within any one-second window.
func maxInWindow(out []published) int {
	best, lo := 0, 0
	for hi := range out {
		for out[hi].at.Sub(out[lo].at) >= time.Second {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestBulkSendsAreCappedInEveryWindow(t *testing.T) {
	for _, c := range []struct {
		name              string
		perSecond, n      int
		immediatePerSleep int
		wantSeconds       float64 // the least the fake clock must have advanced
	}{
		{name: "one per second", perSecond: 1, n: 5, wantSeconds: 4},
		{name: "small", perSecond: 10, n: 35, wantSeconds: 2.5},
		{name: "10k", perSecond: 10_000, n: 50_000, wantSeconds: 4},
		{name: "10k with immediate sends", perSecond: 10_000, n: 30_000, immediatePerSleep: 3, wantSeconds: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, clock, out := fakeSender(c.perSecond)
			start := clock.now
			immediate := 0
			if c.immediatePerSleep > 0 {
				clock.onSleep = func() {
					s.emitNow(routingtable.Messages{Unregistrations: msgs(c.immediatePerSleep, fmt.Sprintf("gone%d-", immediate))})
					immediate += c.immediatePerSleep
				}
			}
			require.True(t, s.enqueue(&bulkBatch{msgs: msgs(c.n, "r")}))
			sent, skipped := s.send(s.queue[0], func() bool { return false })
			s.done()
			assert.Equal(t, c.n, sent)
			assert.Zero(t, skipped)
			assert.Len(t, *out, c.n+immediate)
			assert.LessOrEqual(t, maxInWindow(*out), c.perSecond, "messages in one window")
			elapsed := clock.now.Sub(start).Seconds()
			assert.GreaterOrEqual(t, elapsed, c.wantSeconds)
			// Paced, not starved: about n/perSecond seconds (the cap's own slack aside).
			assert.Less(t, elapsed, float64(c.n+immediate)/float64(c.perSecond)*1.25+0.5)
		})
	}
}

func TestImmediateSendsDelayBulkOnes(t *testing.T) {
	s, clock, out := fakeSender(100)
	start := clock.now
	s.emitNow(routingtable.Messages{Unregistrations: msgs(100, "gone")})
	s.enqueue(&bulkBatch{msgs: msgs(1, "r")})
	s.send(s.queue[0], func() bool { return false })
	require.Len(t, *out, 101)
	assert.GreaterOrEqual(t, (*out)[100].at.Sub(start), time.Second, "the window was full")
}

func TestBulkSendStops(t *testing.T) {
	s, _, out := fakeSender(10)
	s.enqueue(&bulkBatch{msgs: msgs(100, "r")})
	sent, _ := s.send(s.queue[0], func() bool { return len(*out) >= 20 })
	assert.Equal(t, 20, sent)
}

func TestBulkRegisterSkipsWhatALaterEmitSuperseded(t *testing.T) {
	s, _, out := fakeSender(1000)
	a, b, c := msg("a.example.com"), msg("b.example.com"), msg("c.example.com")
	s.emitNow(routingtable.Messages{Unregistrations: []routingtable.RegistryMessage{a}}) // before the batch: irrelevant
	s.enqueue(&bulkBatch{msgs: []routingtable.RegistryMessage{a, b, c}})
	// After the batch was queued: b went away, c got newer content from an event.
	s.emitNow(routingtable.Messages{Unregistrations: []routingtable.RegistryMessage{b}})
	newerC := c
	newerC.Tags = map[string]string{"v": "2"}
	s.emitNow(routingtable.Messages{Registrations: []routingtable.RegistryMessage{newerC}})
	// A batch queued after b's unregister (b came back) must still register it.
	s.enqueue(&bulkBatch{msgs: []routingtable.RegistryMessage{b}})

	never := func() bool { return false }
	sent, skipped := s.send(s.queue[0], never)
	s.done()
	assert.Equal(t, 1, sent)
	assert.Equal(t, 2, skipped, "b's stale register and c's older content")
	sent, skipped = s.send(s.queue[0], never)
	s.done()
	assert.Equal(t, 1, sent)
	assert.Zero(t, skipped)

	var got []string
	for _, p := range *out {
		got = append(got, p.subject+" "+p.uri)
	}
	assert.Equal(t, []string{
		"router.unregister a.example.com", "router.unregister b.example.com", "router.register c.example.com",
		"router.register a.example.com", "router.register b.example.com",
	}, got)
	assert.Zero(t, s.cache.len(), "the registers cancelled the cached unregisters")
	assert.Empty(t, s.touched, "nothing tracked once the queue is empty")
	s.emitNow(routingtable.Messages{Unregistrations: []routingtable.RegistryMessage{a}})
	assert.Empty(t, s.touched, "nothing tracked while no batch waits")
}

func TestABroadcastWaitingDropsTheNext(t *testing.T) {
	s, _, _ := fakeSender(10)
	assert.True(t, s.enqueue(&bulkBatch{broadcast: true}))
	assert.True(t, s.enqueue(&bulkBatch{msgs: msgs(1, "r")}), "sync batches always queue")
	assert.False(t, s.enqueue(&bulkBatch{broadcast: true}))
	s.send(s.queue[0], func() bool { return false })
	s.done()
	assert.True(t, s.enqueue(&bulkBatch{broadcast: true}), "once the first is sent")
	assert.Equal(t, 2, s.queued())
}
