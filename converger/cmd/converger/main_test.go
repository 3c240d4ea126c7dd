package main

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
	"drover.dev/lib/service"
)

// TestConvergerProcess runs the binary against a fake BBS: it waits while another
// owner holds the lock, then converges every interval, reports each pass, serves
// metrics, and exits 1 when the lock is taken away.
func TestConvergerProcess(t *testing.T) {
	bbs, addr := serveFake(t)
	bbs.setHolder("someone-else")
	cfg := convergerConfig(t, addr, "converger-a")
	p := startConverger(t, cfg)

	t.Run("passive while another owner holds the lock", func(t *testing.T) {
		require.Eventually(t, func() bool { return strings.Contains(p.Output(), `"msg":"lock-not-acquired"`) }, waitTimeout, pollEvery)
		assert.Empty(t, bbs.passes())
	})

	t.Run("converges and reports passes once it holds the lock", func(t *testing.T) {
		bbs.setHolder("")
		require.Eventually(t, func() bool { return len(bbs.passes()) >= 2 }, waitTimeout, pollEvery)
		pass := bbs.passes()[0]
		assert.Equal(t, "converger-a", pass.GetOwner())
		assert.Equal(t, int32(1), pass.GetMissing())
		assert.Equal(t, int32(1), pass.GetActionsApplied())
		assert.Empty(t, pass.GetError())
		out := p.Output()
		assert.Contains(t, out, `"msg":"converger-started"`)
		assert.Contains(t, out, `"owner":"converger-a"`)
		assert.Contains(t, out, `"msg":"converger-action"`)
		assert.Contains(t, out, `"kind":"create-missing"`)
	})

	t.Run("serves metrics", func(t *testing.T) {
		resp, err := http.Get("http://" + cfg["debug_address"].(string) + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Contains(t, string(body), "drover_converger_missing 1")
		assert.Contains(t, string(body), `drover_converger_domain_fresh{domain="cf-apps"} 1`)
		assert.Contains(t, string(body), `drover_converger_actions_total{kind="create-missing",outcome="applied"}`)
	})

	t.Run("exits 1 when the lock is lost", func(t *testing.T) {
		bbs.setHolder("usurper")
		require.Equal(t, service.ExitFatal, p.WaitExit(t, waitTimeout))
		assert.Contains(t, p.Output(), `"msg":"lock-lost"`)
	})
}

func TestConvergerReleasesTheLockOnSIGTERM(t *testing.T) {
	bbs, addr := serveFake(t)
	p := startConverger(t, convergerConfig(t, addr, "converger-b"))
	require.Eventually(t, func() bool { return len(bbs.passes()) >= 1 }, waitTimeout, pollEvery)
	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, service.ExitOK, p.WaitExit(t, waitTimeout))
	assert.Empty(t, bbs.lockHolder(), "the lock is released for a passive instance")
}

func TestConvergerRefusesABadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"zero interval", map[string]any{"repeat_interval": "0s"}, "repeat_interval: must be positive"},
		{"unknown field", map[string]any{"repeat_intervall": "1s"}, "repeat_intervall"},
		{"retry not shorter than ttl", map[string]any{"lock_ttl": "1s"}, "lock_retry_interval: must be shorter than lock_ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startConverger(t, tt.cfg)
			require.Equal(t, service.ExitFatal, p.WaitExit(t, waitTimeout))
			assert.Contains(t, p.Output(), tt.want)
		})
	}
	t.Run("missing -config", func(t *testing.T) {
		p := proctest.Start(t, "converger", binDir+"/converger")
		require.Equal(t, service.ExitUsage, p.WaitExit(t, waitTimeout))
		assert.Contains(t, p.Output(), "missing-config-flag")
	})
}
