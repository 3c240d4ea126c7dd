package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDebugServer: every rule of debug_address and debug_admin_address.
func TestDebugServer(t *testing.T) {
	longPath := "unix:/" + strings.Repeat("s", MaxUnixSocketPath)
	tests := []struct {
		name, address, admin, want string
	}{
		{"loopback, admin shared", "127.0.0.1:8890", "", ""},
		{"localhost, admin shared", "localhost:8890", "", ""},
		{"ipv6 loopback, admin shared", "[::1]:8890", "", ""},
		{"other 127/8 address", "127.0.0.2:8890", "", ""},
		{"routable metrics, admin on a unix socket", "0.0.0.0:8890", "unix:/run/drover/bbs-debug.sock", ""},
		{"routable metrics, admin on loopback", "10.0.0.5:8890", "127.0.0.1:8891", ""},
		{"routable metrics, admin off", "0.0.0.0:8890", "off", ""},
		{"loopback metrics, admin off", "127.0.0.1:8890", "off", ""},
		{"debug address required", "", "", "debug_address: is required"},
		{"debug address malformed", "8890", "", `debug_address: must be host:port, got "8890"`},
		{"wildcard with admin shared", "0.0.0.0:8890", "", `debug_address: "0.0.0.0:8890" is not a loopback address, and pprof and /log-level are served there`},
		{"empty host with admin shared", ":8890", "", `debug_address: ":8890" is not a loopback address`},
		{"hostname with admin shared", "debug.example.com:8890", "", `debug_address: "debug.example.com:8890" is not a loopback address`},
		{"admin routable", "127.0.0.1:8890", "0.0.0.0:8891", `debug_admin_address: "0.0.0.0:8891" is not a loopback address`},
		{"admin same as debug address", "127.0.0.1:8890", "127.0.0.1:8890", `debug_admin_address: "127.0.0.1:8890" is also debug_address`},
		{"admin malformed", "127.0.0.1:8890", "loopback", `debug_admin_address: want "", "off", "unix:PATH" or a loopback host:port, got "loopback"`},
		{"admin unix relative", "127.0.0.1:8890", "unix:debug.sock", `debug_admin_address: want "unix:" and an absolute socket path, got "unix:debug.sock"`},
		{"admin unix empty", "127.0.0.1:8890", "unix:", `debug_admin_address: want "unix:" and an absolute socket path`},
		{"admin unix too long", "127.0.0.1:8890", longPath, "debug_admin_address: unix socket path longer than 107 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DebugServer(tt.address, tt.admin)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseDebugAdmin(t *testing.T) {
	for in, want := range map[string]DebugAdmin{
		"":                  {},
		"off":               {Network: "off"},
		"unix:/run/d.sock":  {Network: "unix", Address: "/run/d.sock"},
		"127.0.0.1:8891":    {Network: "tcp", Address: "127.0.0.1:8891"},
		"[::1]:8891":        {Network: "tcp", Address: "[::1]:8891"},
		"0.0.0.0:8891":      {Network: "tcp", Address: "0.0.0.0:8891"},
		"localhost:8891":    {Network: "tcp", Address: "localhost:8891"},
		"unix:/a/../b.sock": {Network: "unix", Address: "/a/../b.sock"},
	} {
		got, err := ParseDebugAdmin(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}
