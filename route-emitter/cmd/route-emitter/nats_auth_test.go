package main

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
)

// TestNATSCredentials: NATS refuses an unauthenticated client, so nobody without the
// password can publish a route; an emitter with a wrong password keeps running and
// retrying, is never connected, and logs the refusal without the password. (Every
// other test of this package runs the emitter with its password file.)
func TestNATSCredentials(t *testing.T) {
	ns := startNATS(t)

	t.Run("an unauthenticated publish is refused", func(t *testing.T) {
		_, err := nats.Connect(ns.ClientURL())
		require.ErrorIs(t, err, nats.ErrAuthorization)
		_, err = nats.Connect(ns.ClientURL(), nats.UserInfo(natsEmitterUser, "guessed"))
		require.ErrorIs(t, err, nats.ErrAuthorization)
	})

	t.Run("a wrong password keeps the emitter retrying", func(t *testing.T) {
		certs := testCerts(t)
		bbsAddr := proctest.ReserveAddress(t)
		startBBSAt(t, bbsAddr, certs)
		const wrong = "wrong-password-5be0"
		before := connectionAttempts(t, ns)
		e := startEmitter(t, "wrong-password-emitter", bbsAddr, ns.ClientURL(), certs, map[string]any{
			"nats_password_file": natsPasswordFile(t, wrong),
		})
		// nats.go gives up after the same authorisation error twice unless told not to.
		require.Eventually(t, func() bool {
			e.running(t)
			return connectionAttempts(t, ns) >= before+4
		}, waitTimeout, pollEvery, "the emitter keeps retrying\n%s", e.Output())
		require.Eventually(t, func() bool { return e.countLogs(natsAuthFailure) >= 1 }, waitTimeout, pollEvery,
			"the emitter logs the refusal\n%s", e.Output())
		e.running(t)
		assert.Empty(t, emitterConnections(t, ns), "never connected")
		assert.Equal(t, 0.0, e.metrics(t)["drover_route_emitter_nats_connected"])
		assert.NotContains(t, e.Output(), wrong)
		assert.NotContains(t, e.Output(), natsEmitterPassword)
	})
}

// connectionAttempts is how many client connections the server has accepted (refused
// logins included).
func connectionAttempts(t *testing.T, ns *server.Server) uint64 {
	t.Helper()
	v, err := ns.Varz(nil)
	require.NoError(t, err)
	return v.TotalConnections
}

// natsAuthFailure matches the emitter's log line of a connection attempt NATS refused.
func natsAuthFailure(l logEntry) bool {
	return l.str("msg") == "nats-connect-failed" && strings.Contains(strings.ToLower(l.str("error")), "authorization")
}
