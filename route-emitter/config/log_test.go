package config

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLogValueRedactsTheNATSPassword(t *testing.T) {
	c := Default()
	c.NATSUsername, c.NATSPassword = "route-emitter", "inline-s3cret"
	var out bytes.Buffer
	slog.New(slog.NewJSONHandler(&out, nil)).Info("route-emitter-starting", "config", &c)
	require.NotContains(t, out.String(), "inline-s3cret")
	require.Contains(t, out.String(), `"nats_password":"[redacted]"`)
	require.Contains(t, out.String(), `"nats_username":"route-emitter"`)
	require.Contains(t, out.String(), `"listen_address":"127.0.0.1:17010"`)
}
