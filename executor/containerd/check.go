package containerd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// defaultCheckTimeout bounds a check without its own timeout.
const defaultCheckTimeout = time.Second

// Check runs one TCP or HTTP check against the container's internal address.
func (r *Runtime) Check(ctx context.Context, guid string, check *modelsv1.Check) error {
	meta, ok, err := r.state.readContainerMeta(guid)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("check %s: container not found", guid)
	}
	return runCheck(ctx, meta.NetInfo.InternalIP, check)
}

// runCheck dials ip:port (tcp) or GETs http://ip:port/path (200 passes).
func runCheck(ctx context.Context, ip string, check *modelsv1.Check) error {
	switch {
	case check.GetTcpCheck() != nil:
		c := check.GetTcpCheck()
		addr := net.JoinHostPort(ip, strconv.Itoa(int(c.Port)))
		d := net.Dialer{Timeout: checkTimeout(c.ConnectTimeoutMs)}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("tcp check %s: %w", addr, err)
		}
		return conn.Close()
	case check.GetHttpCheck() != nil:
		c := check.GetHttpCheck()
		path := c.Path
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		url := "http://" + net.JoinHostPort(ip, strconv.Itoa(int(c.Port))) + path
		ctx, cancel := context.WithTimeout(ctx, checkTimeout(c.RequestTimeoutMs))
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("http check %s: %w", url, err)
		}
		resp, err := checkClient.Do(req)
		if err != nil {
			return fmt.Errorf("http check %s: %w", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("http check %s: status %d", url, resp.StatusCode)
		}
		return nil
	default:
		return errors.New("check: neither tcp_check nor http_check set")
	}
}

// checkClient does not follow redirects or keep connections (a check is one request).
var checkClient = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func checkTimeout(ms uint64) time.Duration {
	if ms == 0 {
		return defaultCheckTimeout
	}
	return time.Duration(ms) * time.Millisecond
}
