package natstest

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"drover.dev/devstack/natsuser"
)

// policyTimeout bounds each wait of RequirePolicy.
const policyTimeout = 10 * time.Second

// RequirePolicy checks that the NATS server at url enforces drover's policy, given the
// users' passwords: a client without credentials, or with a wrong password, is refused;
// with them, a route-emitter's router.register reaches a router, its router.greet gets
// the router's reply and the router's router.start reaches it; a router may not publish
// router.register and a route-emitter may not subscribe to it (Permissions). It checks
// the embedded server of this package and the dev stack's nats-server alike.
func RequirePolicy(t testing.TB, url string, password func(user string) string) {
	t.Helper()
	_, err := nats.Connect(url, nats.Name("unauthenticated"))
	require.ErrorIs(t, err, nats.ErrAuthorization, "a client without credentials is refused")
	_, err = nats.Connect(url, nats.UserInfo(natsuser.RouteEmitter, "not-"+password(natsuser.RouteEmitter)))
	require.ErrorIs(t, err, nats.ErrAuthorization, "a wrong password is refused")

	violations := make(chan error, 16)
	onError := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case violations <- err:
		default:
		}
	})
	connect := func(user string) *nats.Conn {
		nc, err := nats.Connect(url, nats.Name("policy-"+user), nats.UserInfo(user, password(user)), onError)
		require.NoError(t, err, user)
		t.Cleanup(nc.Close)
		return nc
	}
	emitter, router := connect(natsuser.RouteEmitter), connect(natsuser.Router)

	routes, err := router.SubscribeSync("router.*")
	require.NoError(t, err)
	greets, err := router.Subscribe("router.greet", func(m *nats.Msg) { _ = m.Respond([]byte(`{"id":"policy"}`)) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = greets.Unsubscribe() })
	starts, err := emitter.SubscribeSync("router.start")
	require.NoError(t, err)
	require.NoError(t, router.Flush())
	require.NoError(t, emitter.Flush())

	require.NoError(t, emitter.Publish("router.register", []byte(`{"uris":["policy.example.com"]}`)))
	m, err := routes.NextMsg(policyTimeout)
	require.NoError(t, err, "the route-emitter's register reaches the router")
	require.Equal(t, "router.register", m.Subject)

	reply, err := emitter.Request("router.greet", nil, policyTimeout)
	require.NoError(t, err, "a router answers the route-emitter's greet")
	require.Equal(t, `{"id":"policy"}`, string(reply.Data))

	require.NoError(t, router.Publish("router.start", []byte(`{"id":"policy"}`)))
	_, err = starts.NextMsg(policyTimeout)
	require.NoError(t, err, "the router's start reaches the route-emitter")

	drain := func() {
		for {
			select {
			case <-violations:
			default:
				return
			}
		}
	}
	requireViolation := func(what string) {
		t.Helper()
		select {
		case err := <-violations:
			require.Contains(t, strings.ToLower(err.Error()), "permissions violation", what)
		case <-time.After(policyTimeout):
			t.Fatalf("%s: no permissions violation within %s", what, policyTimeout)
		}
	}
	drain()
	require.NoError(t, router.Publish("router.register", []byte(`{"uris":["forged.example.com"]}`)))
	require.NoError(t, router.Flush())
	requireViolation("a router publishes router.register") // and the server dropped it

	drain()
	_, err = emitter.SubscribeSync("router.register")
	require.NoError(t, err) // refused asynchronously
	require.NoError(t, emitter.Flush())
	requireViolation("the route-emitter subscribes to router.register")
}
