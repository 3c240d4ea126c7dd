// Package emitter is the route-emitter's NATS side: it publishes router.register and
// router.unregister, runs the router.greet / router.start handshake, re-registers the
// whole table at the routers' interval, and re-sends unregisters from the
// unregistration cache (reference/routing.md §1, §2.8). Event-driven messages go out at
// once; bulk registrations (a full sync's, a re-registration) go through one paced
// sender that keeps every one-second window under the configured rate (sender.go).
package emitter

import (
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"drover.dev/lib/logging"
	"drover.dev/route-emitter/metrics"
	"drover.dev/route-emitter/routingtable"
)

// NATS subjects of the gorouter protocol.
const (
	SubjectGreet      = "router.greet"
	SubjectStart      = "router.start"
	SubjectRegister   = "router.register"
	SubjectUnregister = "router.unregister"
)

// StartMessage is the body of router.start and of a greet reply.
type StartMessage struct {
	ID                               string   `json:"id,omitempty"`
	Hosts                            []string `json:"hosts,omitempty"`
	MinimumRegisterIntervalInSeconds int      `json:"minimumRegisterIntervalInSeconds"`
	PruneThresholdInSeconds          int      `json:"pruneThresholdInSeconds"`
}

// Options configure an Emitter.
type Options struct {
	// Addresses are NATS URLs (nats://host:port).
	Addresses          []string
	Username, Password string
	// TLS, when set, is used for the NATS connection.
	TLS *tls.Config
	// RegisterInterval is the re-registration period until a router tells its own.
	RegisterInterval time.Duration
	GreetInterval    time.Duration
	JitterFactor     float64
	// MaxMessagesPerSecond caps the messages of any one-second window: bulk registrations
	// (a sync's, a re-broadcast) are paced so that, with the immediate ones, no window
	// holds more.
	MaxMessagesPerSecond    int
	UnregistrationInterval  time.Duration
	UnregistrationSendCount int
	Logger                  *slog.Logger
	Metrics                 *metrics.Metrics
	// Clock paces bulk registrations (default: the real clock).
	Clock Clock
}

// Source returns every registration to re-broadcast (nil while the emitter is standby).
type Source func() []routingtable.RegistryMessage

// Emitter publishes to the routers. Emit may be called from any goroutine.
type Emitter struct {
	opts    Options
	log     *slog.Logger
	conn    atomic.Pointer[nats.Conn]
	cache   *unregistrationCache
	sender  *sender
	source  atomic.Pointer[Source]
	routerS atomic.Int32 // register interval seconds a router asked for (0: none yet)

	starts     chan StartMessage
	replies    chan StartMessage
	reconnects chan struct{}
	broadcasts chan struct{}
	wg         sync.WaitGroup
}

// New returns an emitter; Run connects it.
func New(opts Options) *Emitter {
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	e := &Emitter{
		opts:       opts,
		log:        logging.OrDiscard(opts.Logger).With("component", "emitter"),
		cache:      newUnregistrationCache(opts.UnregistrationSendCount),
		starts:     make(chan StartMessage, 16),
		replies:    make(chan StartMessage, 16),
		reconnects: make(chan struct{}, 1),
		broadcasts: make(chan struct{}, 1),
	}
	e.sender = newSender(e.publish, e.cache, opts.MaxMessagesPerSecond, opts.Clock, opts.Metrics, e.log)
	return e
}

// SetSource sets what periodic re-registrations publish (nil: nothing).
func (e *Emitter) SetSource(s Source) {
	if s == nil {
		e.source.Store(nil)
		return
	}
	e.source.Store(&s)
}

// RegisterIntervalSeconds is the interval the routers asked for (0 before any answered).
func (e *Emitter) RegisterIntervalSeconds() int32 { return e.routerS.Load() }

// Connected reports whether the NATS connection is up.
func (e *Emitter) Connected() bool {
	c := e.conn.Load()
	return c != nil && c.IsConnected()
}

// RequestBroadcast asks for a re-registration of everything (dropped if one is queued).
func (e *Emitter) RequestBroadcast() {
	select {
	case e.broadcasts <- struct{}{}:
	default:
	}
}

// Emit publishes m at once (event-driven changes, a sync's unregistrations):
// registrations cancel matching cached unregisters, unregistrations are published and
// cached for re-sending.
func (e *Emitter) Emit(m routingtable.Messages) {
	if m.Empty() {
		return
	}
	e.sender.emitNow(m)
	e.log.Debug("emitted", "registrations", len(m.Registrations), "unregistrations", len(m.Unregistrations))
}

// EmitBulk queues registrations (a full sync's) for the paced sender: they go out in
// order, at most MaxMessagesPerSecond in any second, skipping any that an Emit after
// this call superseded (see sender). Nothing is sent before Run starts.
func (e *Emitter) EmitBulk(registrations []routingtable.RegistryMessage) {
	if len(registrations) == 0 {
		return
	}
	e.sender.enqueue(&bulkBatch{msgs: registrations})
}

// publish sends one message (one URI each, as upstream).
func (e *Emitter) publish(subject string, m routingtable.RegistryMessage) {
	conn := e.conn.Load()
	if conn == nil {
		e.log.Error("publish-before-connect", "subject", subject)
		return
	}
	data, err := json.Marshal(m)
	if err != nil {
		e.log.Error("marshal-failed", "error", err.Error())
		return
	}
	if err := conn.Publish(subject, data); err != nil {
		e.log.Error("publish-failed", "subject", subject, "error", err.Error())
	}
}

// connect opens the connection; it retries forever in the background when NATS is down.
func (e *Emitter) connect() (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("route-emitter"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		// A refused password (a wrong one, or users not configured yet) is retried like
		// any failure, not given up on.
		nats.IgnoreAuthErrorAbort(),
		nats.PingInterval(20 * time.Second),
		nats.ConnectHandler(func(*nats.Conn) {
			e.log.Info("nats-connected")
			e.opts.Metrics.NATSConnected(true)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			e.log.Error("nats-disconnected", "error", errString(err))
			e.opts.Metrics.NATSConnected(false)
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			// Every failed attempt, the first connection's included (NATS down, a TLS
			// or authorisation problem): the emitter keeps retrying.
			e.log.Error("nats-connect-failed", "error", errString(err))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			// Asynchronous errors: a reconnect the server refused (authorisation), a
			// permissions violation, a slow consumer.
			e.log.Error("nats-error", "error", errString(err))
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			e.log.Info("nats-reconnected")
			e.opts.Metrics.NATSConnected(true)
			select {
			case e.reconnects <- struct{}{}:
			default:
			}
		}),
	}
	if e.opts.Username != "" {
		opts = append(opts, nats.UserInfo(e.opts.Username, e.opts.Password))
	}
	if e.opts.TLS != nil {
		opts = append(opts, nats.Secure(e.opts.TLS))
	}
	return nats.Connect(strings.Join(e.opts.Addresses, ","), opts...)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Run connects (ready at once, retrying in the background), greets every greet
// interval until a router answers, follows router.start, re-registers everything
// every interval and re-sends cached unregisters. It never fails because no router
// answers or NATS is down; a signal closes the connection.
func (e *Emitter) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	conn, err := e.connect()
	if err != nil {
		return err
	}
	e.conn.Store(conn)
	stopSender := make(chan struct{})
	e.wg.Add(1)
	go func() { defer e.wg.Done(); e.sender.run(stopSender) }()
	defer func() {
		close(stopSender)
		e.wg.Wait()
		_ = conn.Flush()
		conn.Close()
		e.opts.Metrics.NATSConnected(false)
	}()
	inbox := nats.NewInbox()
	if _, err := conn.Subscribe(inbox, e.forward(e.replies)); err != nil {
		return err
	}
	if _, err := conn.Subscribe(SubjectStart, e.forward(e.starts)); err != nil {
		return err
	}
	// Best effort: when NATS is up, the subscriptions are in place once ready.
	_ = conn.FlushTimeout(time.Second)
	close(ready)

	interval := e.opts.RegisterInterval
	register := time.NewTimer(interval)
	defer register.Stop()
	greet := time.NewTicker(e.opts.GreetInterval)
	defer greet.Stop()
	unregister := time.NewTicker(e.opts.UnregistrationInterval)
	defer unregister.Stop()
	var jitter <-chan time.Time
	answered := false
	e.greet(conn, inbox)

	for {
		select {
		case <-signals:
			return nil
		case <-greet.C:
			if !answered {
				e.greet(conn, inbox)
			}
		case m := <-e.replies:
			answered = true
			interval = e.setInterval(m, interval)
			register.Reset(interval)
		case m := <-e.starts:
			answered = true
			interval = e.setInterval(m, interval)
			d := time.Duration(rand.Float64() * e.opts.JitterFactor * float64(interval))
			e.log.Info("router-start", "id", m.ID, "interval", interval.String(), "jitter", d.String())
			jitter = time.After(d)
		case <-jitter:
			jitter = nil
			e.broadcast()
			register.Reset(interval)
		case <-register.C:
			e.broadcast()
			register.Reset(interval)
		case <-e.reconnects:
			e.broadcast()
			if !answered {
				e.greet(conn, inbox)
			}
		case <-e.broadcasts:
			e.broadcast()
		case <-unregister.C:
			e.sender.resendDue()
		}
	}
}

// forward decodes a start message onto ch.
func (e *Emitter) forward(ch chan<- StartMessage) nats.MsgHandler {
	return func(msg *nats.Msg) {
		if len(msg.Data) == 0 {
			return // a "no responders" status on the greet inbox: nobody is listening yet
		}
		var m StartMessage
		if err := json.Unmarshal(msg.Data, &m); err != nil {
			e.log.Error("invalid-start-message", "subject", msg.Subject, "error", err.Error())
			return
		}
		select {
		case ch <- m:
		default:
		}
	}
}

// greet asks the routers for their interval.
func (e *Emitter) greet(conn *nats.Conn, inbox string) {
	if err := conn.PublishRequest(SubjectGreet, inbox, nil); err != nil {
		e.log.Error("greet-failed", "error", err.Error())
	}
}

// setInterval takes the router's interval (the last one wins), clamped to
// [MinRouterInterval, MaxRouterInterval], keeping current when the message carries none.
func (e *Emitter) setInterval(m StartMessage, current time.Duration) time.Duration {
	iv := intervalsOf(m)
	if iv.Clamped {
		e.log.Warn("router-intervals-out-of-range", "id", m.ID,
			"minimum_register_interval_in_seconds", m.MinimumRegisterIntervalInSeconds, "prune_threshold_in_seconds", m.PruneThresholdInSeconds,
			"register_interval", iv.Register.String(), "prune_threshold", iv.Prune.String(),
			"range", MinRouterInterval.String()+".."+MaxRouterInterval.String())
	}
	if iv.Register == 0 {
		return current
	}
	if iv.Prune > 0 && iv.Register >= iv.Prune {
		// The router would prune routes between two registrations.
		e.log.Warn("router-register-interval-not-below-prune-threshold", "id", m.ID,
			"register_interval", iv.Register.String(), "prune_threshold", iv.Prune.String())
	}
	e.routerS.Store(int32(iv.Register / time.Second))
	return iv.Register
}

// broadcast queues a re-registration of everything for the paced sender (the source is
// read when its turn comes); a broadcast still waiting or running makes this one a no-op.
func (e *Emitter) broadcast() {
	if e.source.Load() == nil {
		return
	}
	e.sender.enqueue(&bulkBatch{source: func() []routingtable.RegistryMessage {
		p := e.source.Load() // standby since queued: nothing
		if p == nil {
			return nil
		}
		return (*p)()
	}, broadcast: true})
}
