package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{in: "debug", want: slog.LevelDebug},
		{in: "info", want: slog.LevelInfo},
		{in: "warn", want: slog.LevelWarn},
		{in: "error", want: slog.LevelError},
		{in: " ERROR ", want: slog.LevelError},
		{in: "", wantErr: true},
		{in: "verbose", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLevel(tt.in)
			if tt.wantErr {
				require.ErrorContains(t, err, "unknown log level")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, strings.ToLower(strings.TrimSpace(tt.in)), LevelName(got))
		})
	}
}

func TestNewWritesJSONWithUTCTime(t *testing.T) {
	var buf bytes.Buffer
	logger, _, err := New(&buf, "info")
	require.NoError(t, err)

	before := time.Now().Add(-time.Second)
	logger.Info("thing-happened", "guid", "abc")

	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, "thing-happened", line["msg"])
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "abc", line["guid"])

	stamp, ok := line["time"].(string)
	require.True(t, ok, "time is a string")
	require.True(t, strings.HasSuffix(stamp, "Z"), "time %q is UTC", stamp)
	parsed, err := time.Parse(time.RFC3339Nano, stamp)
	require.NoError(t, err)
	require.WithinDuration(t, before, parsed, 5*time.Second)
}

func TestLevelVarControlsOutput(t *testing.T) {
	var buf bytes.Buffer
	logger, level, err := New(&buf, "warn")
	require.NoError(t, err)

	logger.Info("hidden")
	require.Empty(t, buf.String())

	level.Set(slog.LevelDebug)
	logger.Debug("shown")
	require.Contains(t, buf.String(), `"msg":"shown"`)
}

func TestNewRejectsBadInput(t *testing.T) {
	_, _, err := New(&bytes.Buffer{}, "loud")
	require.Error(t, err)
	_, _, err = New(nil, "info")
	require.Error(t, err)
}

func TestOrDiscard(t *testing.T) {
	require.NotNil(t, OrDiscard(nil))
	logger := slog.New(slog.DiscardHandler)
	require.Same(t, logger, OrDiscard(logger))
}
