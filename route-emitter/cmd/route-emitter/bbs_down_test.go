package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
)

// TestKeepsRunningWhileTheBBSIsDown: started against an address where no BBS listens,
// the emitter (global and local mode) stays up and logs its retries; once a BBS
// starts on that address it syncs and registers.
func TestKeepsRunningWhileTheBBSIsDown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]any
	}{
		{"global", map[string]any{"lock_ttl": "2s", "lock_retry_interval": "200ms"}},
		{"local", map[string]any{"cell_id": "cell-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certs := testCerts(t)
			bbsAddr := proctest.FreeAddress(t) // closed until the BBS starts on it
			ns := startNATS(t)
			rec := recordRegisters(t, ns.ClientURL())

			e := startEmitter(t, tc.name+"-emitter", bbsAddr, ns.ClientURL(), certs, tc.config)
			require.Eventually(t, func() bool {
				e.running(t)
				return e.countLogs(bbsUnreachable) >= 3
			}, waitTimeout, pollEvery, "the emitter logs repeated BBS failures\n%s", e.Output())
			e.running(t)

			bbs := startBBSAt(t, bbsAddr, certs)
			desireRoutedLRP(t, bbs, "web", "web.example.com", 1)
			web := instance{processGUID: "web", index: 0, cellID: "cell-1", guid: "web-0", hostPort: 61000}
			web.run(t, bbs)
			e.waitStarted(t)
			rec.waitCount(t, e, web.guid, 1)
			got, _ := rec.last(web.guid)
			require.Equal(t, []string{"web.example.com"}, got.URIs)
			require.Equal(t, web.address(), got.Host)
		})
	}
}

// bbsUnreachable matches a log line that reports a refused BBS connection.
func bbsUnreachable(l logEntry) bool {
	for _, v := range l {
		if s, ok := v.(string); ok && strings.Contains(s, "connection refused") {
			return true
		}
	}
	return false
}
