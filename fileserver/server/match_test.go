package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/blobstore"
)

// matchBody is a resource_match body of n distinct entries.
func matchBody(t *testing.T, n int) []byte {
	t.Helper()
	list := make([]map[string]any, n)
	for i := range list {
		list[i] = entry("", fmt.Sprint(i))
	}
	data, err := json.Marshal(list)
	require.NoError(t, err)
	return data
}

// TestResourceMatchLimits: the body and its entries are capped, with or without a
// Content-Length, and each refusal names its limit.
func TestResourceMatchLimits(t *testing.T) {
	atLimit := matchBody(t, testMatchLimits.MaxResources)
	overBytes := append([]byte(`[{"sha1":"`+strings.Repeat("a", 40)+`","size":1,"fn":"`), bytes.Repeat([]byte("x"), 5000)...)
	overBytes = append(overBytes, `"}]`...)
	tests := []struct {
		name    string
		body    io.Reader
		code    int
		want    string
		reason  string
		entries int
	}{
		{"entries at the limit", bytes.NewReader(atLimit), 200, "[]", "", 0},
		{"one entry over the limit", bytes.NewReader(matchBody(t, testMatchLimits.MaxResources+1)), 413,
			"resource_match: more than 10 resources (max_match_resources): send them in batches", "too-many-resources", 0},
		{"body over the limit, with Content-Length", bytes.NewReader(overBytes), 413,
			"resource_match: body larger than 4096 bytes (max_match_bytes)", "too-large", 0},
		{"body over the limit, chunked", io.MultiReader(bytes.NewReader(overBytes)), 413,
			"resource_match: body larger than 4096 bytes (max_match_bytes)", "too-large", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req, err := http.NewRequest(http.MethodPost, f.url+"/v1/resource_match", tt.body)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.code, resp.StatusCode)
			assert.Contains(t, string(body), tt.want)
			if tt.reason != "" {
				assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.Refusals.WithLabelValues(tt.reason)))
			}
		})
	}
}

// heldMatch is a resource_match whose body is still being sent: it holds a slot.
type heldMatch struct {
	conn net.Conn
	rest string
}

// holdMatch sends the headers and part of a valid body and, unless inFlight is 0,
// waits until the server counts inFlight matches in progress.
func (f *fixture) holdMatch(t *testing.T, inFlight float64) *heldMatch {
	t.Helper()
	body := string(matchBody(t, 1))
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(waitTimeout)))
	_, err = fmt.Fprintf(conn, "POST /v1/resource_match HTTP/1.1\r\nHost: fileserver\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	require.NoError(t, err)
	if inFlight > 0 {
		require.Eventually(t, func() bool { return testutil.ToFloat64(f.metrics.MatchesInFlight) == inFlight }, waitTimeout, pollEvery)
	}
	return &heldMatch{conn: conn, rest: body[10:]}
}

// response reads the held match's answer.
func (h *heldMatch) response(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(h.conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestResourceMatchConcurrencyLimit: with every slot held, one more match is refused at
// once with 503 and Retry-After; a finished match frees its slot.
func TestResourceMatchConcurrencyLimit(t *testing.T) {
	f := newFixture(t)
	first := f.holdMatch(t, 1)
	f.holdMatch(t, 2)

	code, body, h := do(t, "POST", f.url+"/v1/resource_match", matchBody(t, 1), nil)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, body, "resource_match: 2 matches in progress, the limit (max_concurrent_matches); retry later")
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.Refusals.WithLabelValues("busy")))

	_, err := io.WriteString(first.conn, first.rest)
	require.NoError(t, err)
	code, body = first.response(t)
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return testutil.ToFloat64(f.metrics.MatchesInFlight) == 1 }, waitTimeout, pollEvery)
	code, body, _ = do(t, "POST", f.url+"/v1/resource_match", matchBody(t, 1), nil)
	assert.Equal(t, http.StatusOK, code, body)
}

// TestResourceMatchSlowBodyTimesOut: a client that stops sending its body gets 408
// after the read timeout, and its slot is freed.
func TestResourceMatchSlowBodyTimesOut(t *testing.T) {
	f := newFixtureWith(t, func(o *Options) { o.Match.MaxConcurrent, o.Match.ReadTimeout = 1, 50*time.Millisecond })
	held := f.holdMatch(t, 0)
	code, body := held.response(t)
	assert.Equal(t, http.StatusRequestTimeout, code)
	assert.Contains(t, body, "resource_match: body not received within 50ms")
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.Refusals.WithLabelValues("timeout")))
	require.Eventually(t, func() bool { return testutil.ToFloat64(f.metrics.MatchesInFlight) == 0 }, waitTimeout, pollEvery)
	code, body, _ = do(t, "POST", f.url+"/v1/resource_match", matchBody(t, 1), nil)
	assert.Equal(t, http.StatusOK, code, body)
}

// TestNewRequiresLimits: New refuses limits that are not positive.
func TestNewRequiresLimits(t *testing.T) {
	store, err := blobstore.Open(t.TempDir())
	require.NoError(t, err)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	valid := Options{StaticDir: t.TempDir(), Store: store, Metrics: m, MaxPackageListBytes: 1, Match: testMatchLimits}
	for name, tune := range map[string]func(*Options){
		"max bytes":      func(o *Options) { o.Match.MaxBytes = 0 },
		"max resources":  func(o *Options) { o.Match.MaxResources = -1 },
		"max concurrent": func(o *Options) { o.Match.MaxConcurrent = 0 },
		"read timeout":   func(o *Options) { o.Match.ReadTimeout = -time.Second },
		"list bytes":     func(o *Options) { o.MaxPackageListBytes = 0 },
	} {
		opts := valid
		tune(&opts)
		_, err := New(opts)
		assert.Error(t, err, name)
	}
	s, err := New(valid)
	require.NoError(t, err)
	assert.Equal(t, DefaultMatchReadTimeout, s.opts.Match.ReadTimeout)
	require.NoError(t, s.Close())
}
