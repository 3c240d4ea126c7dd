package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
)

// The values of a debug_admin_address besides a loopback host:port.
const (
	// DebugAdminShared ("", the default) serves pprof and /log-level on debug_address,
	// which must then be a loopback address.
	DebugAdminShared = ""
	// DebugAdminOff serves pprof and /log-level nowhere.
	DebugAdminOff = "off"
	// UnixPrefix starts a unix socket address: "unix:/run/drover/bbs-debug.sock".
	UnixPrefix = "unix:"
)

// MaxUnixSocketPath bounds a unix socket path (the kernel's sun_path holds 108 bytes
// with the terminating NUL).
const MaxUnixSocketPath = 107

// DebugAdmin is a parsed debug_admin_address: where a process serves the debug
// endpoints that act on it or reveal its memory (pprof and PUT /log-level).
type DebugAdmin struct {
	// Network is "" (DebugAdminShared), "off", "tcp" or "unix".
	Network string
	// Address is the host:port ("tcp") or the socket path ("unix").
	Address string
}

// ParseDebugAdmin parses a debug_admin_address: "" (DebugAdminShared), "off",
// "unix:PATH" or host:port. It checks only the form; DebugServer checks the rules.
func ParseDebugAdmin(s string) (DebugAdmin, error) {
	switch {
	case s == DebugAdminShared:
		return DebugAdmin{}, nil
	case s == DebugAdminOff:
		return DebugAdmin{Network: DebugAdminOff}, nil
	case strings.HasPrefix(s, UnixPrefix):
		path := strings.TrimPrefix(s, UnixPrefix)
		switch {
		case !filepath.IsAbs(path):
			return DebugAdmin{}, fmt.Errorf(`want "unix:" and an absolute socket path, got %q`, s)
		case len(path) > MaxUnixSocketPath:
			return DebugAdmin{}, fmt.Errorf("unix socket path longer than %d bytes", MaxUnixSocketPath)
		}
		return DebugAdmin{Network: "unix", Address: path}, nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return DebugAdmin{}, fmt.Errorf(`want "", "off", "unix:PATH" or a loopback host:port, got %q`, s)
	}
	return DebugAdmin{Network: "tcp", Address: s}, nil
}

// DebugServer checks a process's debug_address and debug_admin_address. /metrics and
// /healthz are served on debug_address, which may be any host:port (Prometheus scrapes
// it from elsewhere). pprof and /log-level are served only on loopback or a unix
// socket: on debug_address when debug_admin_address is "" (debug_address must then be a
// loopback address), on a separate loopback host:port or "unix:PATH" socket, or nowhere
// ("off").
func DebugServer(address, admin string) error {
	if err := Address("debug_address", address); err != nil {
		return err
	}
	parsed, err := ParseDebugAdmin(admin)
	if err != nil {
		return Invalid("debug_admin_address", "%v", err)
	}
	switch parsed.Network {
	case DebugAdminShared:
		if !IsLoopback(address) {
			return Invalid("debug_address", "%q is not a loopback address, and pprof and /log-level are served there: "+
				`set debug_admin_address to a loopback host:port, "unix:PATH" or "off" to serve only /metrics and /healthz on it`, address)
		}
	case "tcp":
		if !IsLoopback(parsed.Address) {
			return Invalid("debug_admin_address", "%q is not a loopback address (pprof and /log-level stay on loopback or a unix socket)", admin)
		}
		if parsed.Address == address {
			return Invalid("debug_admin_address", "%q is also debug_address: leave it empty to serve everything there", admin)
		}
	}
	return nil
}

// IsLoopback reports whether the host of a host:port is "localhost" or a loopback IP
// literal (127.0.0.0/8, ::1). Other names are not resolved, so they do not count.
func IsLoopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
