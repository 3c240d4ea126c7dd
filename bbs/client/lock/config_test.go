package lock

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	libconfig "drover.dev/lib/config"
)

func TestDefaultConfigIsValid(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.ValidateLock())
	assert.Equal(t, DefaultTTL, c.LockTTL.Duration())
	assert.Equal(t, DefaultRetryInterval, c.LockRetryInterval.Duration())
	assert.Empty(t, c.LockOwner)
}

func TestValidateLockNamesEveryBadField(t *testing.T) {
	tests := []struct {
		name        string
		ttl, retry  time.Duration
		wantErrors  []string
		wantNothing bool
	}{
		{name: "ttl zero", ttl: 0, retry: time.Second, wantErrors: []string{"lock_ttl: must be positive, got 0s"}},
		{name: "ttl negative", ttl: -time.Second, retry: time.Second, wantErrors: []string{"lock_ttl: must be positive, got -1s"}},
		{name: "retry zero", ttl: time.Second, retry: 0, wantErrors: []string{"lock_retry_interval: must be positive, got 0s"}},
		{name: "both zero", wantErrors: []string{"lock_ttl: must be positive, got 0s", "lock_retry_interval: must be positive, got 0s"}},
		{name: "retry equal to ttl", ttl: 15 * time.Second, retry: 15 * time.Second,
			wantErrors: []string{"lock_retry_interval: must be shorter than lock_ttl (15s), got 15s"}},
		{name: "retry longer than ttl", ttl: time.Second, retry: 5 * time.Second,
			wantErrors: []string{"lock_retry_interval: must be shorter than lock_ttl (1s), got 5s"}},
		{name: "retry shorter than ttl", ttl: 2 * time.Second, retry: 100 * time.Millisecond, wantNothing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{LockTTL: libconfig.Duration(tt.ttl), LockRetryInterval: libconfig.Duration(tt.retry)}
			err := c.ValidateLock()
			if tt.wantNothing {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantErrors, strings.Split(err.Error(), "\n"))
		})
	}
}

// componentConfig embeds Config as the components' configs do.
type componentConfig struct {
	Name string `json:"name"`
	Config
}

func TestConfigFieldsSitAtTheTopLevelOfTheFile(t *testing.T) {
	c := componentConfig{Config: DefaultConfig()}
	require.NoError(t, libconfig.Decode([]byte(`{"name":"x","lock_ttl":"2s","lock_retry_interval":"100ms","lock_owner":"a-1"}`), &c))
	assert.Equal(t, 2*time.Second, c.LockTTL.Duration())
	assert.Equal(t, 100*time.Millisecond, c.LockRetryInterval.Duration())
	assert.Equal(t, "a-1", c.LockOwner)

	c = componentConfig{Config: DefaultConfig()}
	require.NoError(t, libconfig.Decode([]byte(`{"name":"x"}`), &c))
	assert.Equal(t, DefaultConfig(), c.Config, "defaults kept")
	require.ErrorContains(t, libconfig.Decode([]byte(`{"lock":{"lock_ttl":"2s"}}`), &c), `"lock"`, "no nested object")
}

func TestConfigOwnerAndOptions(t *testing.T) {
	c := Config{LockTTL: libconfig.Duration(2 * time.Second), LockRetryInterval: libconfig.Duration(time.Second)}
	assert.Regexp(t, `^converger-[0-9a-f]{16}$`, c.LockOwnerID("converger"))
	c.LockOwner = "conv-0"
	assert.Equal(t, "conv-0", c.LockOwnerID("converger"))

	logger := slog.Default()
	assert.Equal(t, Options{Key: "converger", Owner: "conv-0", Value: "10.0.0.1:9016", TTL: 2 * time.Second, RetryInterval: time.Second, Logger: logger},
		c.LockOptions("converger", "conv-0", "10.0.0.1:9016", logger))
}
