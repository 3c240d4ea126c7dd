package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/lib/devcerts"
	"drover.dev/lib/proctest"
	"drover.dev/lib/tlsconfig"
)

// handshakeCounter is a NATS server logger that counts failed TLS handshakes.
type handshakeCounter struct{ failures atomic.Int64 }

func (h *handshakeCounter) count(format string, v ...any) {
	if strings.Contains(fmt.Sprintf(format, v...), "TLS handshake error") {
		h.failures.Add(1)
	}
}

func (h *handshakeCounter) Noticef(format string, v ...any) { h.count(format, v...) }
func (h *handshakeCounter) Warnf(format string, v ...any)   { h.count(format, v...) }
func (h *handshakeCounter) Fatalf(format string, v ...any)  { h.count(format, v...) }
func (h *handshakeCounter) Errorf(format string, v ...any)  { h.count(format, v...) }
func (h *handshakeCounter) Debugf(format string, v ...any)  { h.count(format, v...) }
func (h *handshakeCounter) Tracef(format string, v ...any)  { h.count(format, v...) }

// startTLSNATS runs an embedded NATS server that requires TLS with a client
// certificate signed by the dev CA; it counts failed handshakes.
func startTLSNATS(t *testing.T, certs certFiles) (*server.Server, *handshakeCounter) {
	t.Helper()
	serverTLS, err := certs("nats").Server() // requires and verifies client certificates
	require.NoError(t, err)
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true,
		TLS: true, TLSVerify: true, TLSConfig: serverTLS, TLSTimeout: 2})
	require.NoError(t, err)
	counter := &handshakeCounter{}
	s.SetLogger(counter, false, false)
	go s.Start()
	require.True(t, s.ReadyForConnections(waitTimeout))
	t.Cleanup(s.Shutdown)
	return s, counter
}

// otherCA writes a CA unrelated to the dev CA and returns its certificate file.
func otherCA(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	_, err := devcerts.LoadOrCreateCA(dir)
	require.NoError(t, err)
	return filepath.Join(dir, "ca.crt")
}

// TestNATSWithTLS: with nats_tls the emitter connects to a NATS server that requires
// TLS and client certificates, and its registers reach a TLS subscriber. With a CA
// that does not sign the server's certificate it keeps running, retrying, and logs
// the failure.
func TestNATSWithTLS(t *testing.T) {
	certs := testCerts(t)
	bbsAddr := proctest.ReserveAddress(t)
	bbs := startBBSAt(t, bbsAddr, certs)
	desireRoutedLRP(t, bbs, "web", "web.example.com", 1)
	web := instance{processGUID: "web", index: 0, cellID: "cell-1", guid: "web-0", hostPort: 61000}
	web.run(t, bbs)

	t.Run("registers over TLS", func(t *testing.T) {
		ns, _ := startTLSNATS(t, certs)
		clientTLS, err := certs("client").Client()
		require.NoError(t, err)
		rec := recordRegisters(t, ns.ClientURL(), nats.Secure(clientTLS))

		e := startEmitter(t, "tls-emitter", bbsAddr, ns.ClientURL(), certs, map[string]any{"nats_tls": certs("route-emitter")})
		e.waitStarted(t)
		rec.waitCount(t, e, web.guid, 1)
		got, _ := rec.last(web.guid)
		assert.Equal(t, []string{"web.example.com"}, got.URIs)
		assert.Equal(t, web.address(), got.Host)
		conns := emitterConnections(t, ns)
		require.Len(t, conns, 1)
		for _, c := range conns {
			assert.NotEmpty(t, c.TLSVersion, "the emitter's NATS connection uses TLS")
		}
	})

	t.Run("wrong CA keeps running and retrying", func(t *testing.T) {
		ns, handshakes := startTLSNATS(t, certs)
		wrong := certs("route-emitter")
		wrong.CAFile = otherCA(t)
		e := startEmitter(t, "wrong-ca-emitter", bbsAddr, ns.ClientURL(), certs, map[string]any{
			"nats_tls": tlsconfig.Files{CAFile: wrong.CAFile, CertFile: wrong.CertFile, KeyFile: wrong.KeyFile},
		})
		// Retries show up as repeated failed handshakes at the server.
		require.Eventually(t, func() bool {
			e.running(t)
			return handshakes.failures.Load() >= 3
		}, waitTimeout, pollEvery, "the emitter retries the TLS connection\n%s", e.Output())
		e.running(t)
		assert.Empty(t, emitterConnections(t, ns), "no connection with an untrusted server certificate")
		assert.Equal(t, 0.0, e.metrics(t)["drover_route_emitter_nats_connected"])
		require.Eventually(t, func() bool {
			e.running(t)
			return e.countLogs(natsTLSFailure) >= 1
		}, 5*time.Second, pollEvery, "the emitter logs the NATS TLS failure (an ERROR/WARN line about nats naming the certificate problem)\n%s", e.Output())
	})
}

// natsTLSFailure matches an ERROR or WARN log line about NATS whose attributes name
// the certificate problem.
func natsTLSFailure(l logEntry) bool {
	if level := l.str("level"); level != "ERROR" && level != "WARN" {
		return false
	}
	if !strings.Contains(l.str("msg"), "nats") {
		return false
	}
	for _, v := range l {
		s, _ := v.(string)
		if strings.Contains(s, "certificate") || strings.Contains(s, "x509") || strings.Contains(s, "tls") {
			return true
		}
	}
	return false
}
