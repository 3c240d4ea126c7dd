package emitter

import (
	"encoding/json"
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

func TestPaceCapsEveryWindow(t *testing.T) {
	for _, c := range []struct{ n, perSecond, windows int }{{0, 10, 0}, {10, 10, 1}, {25, 10, 3}, {1, 1000, 1}} {
		sent := 0
		clock := &fakeClock{now: time.Unix(0, 0), sent: &sent}
		pace(c.n, c.perSecond, clock, func(int) { sent++ }, func() bool { return false })
		assert.Equal(t, c.n, sent)
		require.Len(t, clock.marks, max(0, c.windows-1), "one wait between windows")
		prev := 0
		for _, m := range append(clock.marks, sent) {
			assert.LessOrEqual(t, m-prev, c.perSecond, "sends in one window")
			prev = m
		}
		for _, d := range clock.sleeps {
			assert.Equal(t, time.Second, d, "the fake clock does not advance while sending")
		}
	}
}

func TestPaceStops(t *testing.T) {
	sent := 0
	clock := &fakeClock{now: time.Unix(0, 0), sent: &sent}
	pace(100, 10, clock, func(int) { sent++ }, func() bool { return sent >= 20 })
	assert.Equal(t, 20, sent)
}

// fakeClock records how many sends happened before each wait.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
	marks  []int
	sent   *int
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(d time.Duration) {
	c.sleeps = append(c.sleeps, d)
	c.marks = append(c.marks, *c.sent)
	c.now = c.now.Add(d)
}
