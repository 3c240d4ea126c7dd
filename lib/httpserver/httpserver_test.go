package httpserver

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"

	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

func certs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	path := func(name string) string { return filepath.Join(dir, name) }
	server, err := tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("bbs.crt"), KeyFile: path("bbs.key")}.Server()
	require.NoError(t, err)
	client, err = tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("client.crt"), KeyFile: path("client.key")}.Client()
	require.NoError(t, err)
	return server, client
}

func start(t *testing.T, srv *http.Server, opts ...Option) (ifrit.Process, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	process := ifrit.Invoke(FromListener(lis, srv, nil, opts...))
	t.Cleanup(func() {
		process.Signal(os.Kill)
		<-process.Wait()
	})
	return process, lis.Addr().String()
}

func client(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true},
	}
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "hello")
})

func TestServesTLSAndRequiresClientCertificates(t *testing.T) {
	serverTLS, clientTLS := certs(t)
	_, strangerTLS := certs(t)
	_, addr := start(t, &http.Server{Handler: hello, TLSConfig: serverTLS})
	url := "https://" + addr + "/"

	resp, err := client(clientTLS).Get(url)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "hello", string(body))
	require.Equal(t, 2, resp.ProtoMajor, "HTTP/2 is negotiated over TLS")

	noCert := clientTLS.Clone()
	noCert.Certificates = nil
	stranger := strangerTLS.Clone()
	stranger.RootCAs = clientTLS.RootCAs
	tests := []struct {
		name   string
		config *tls.Config
	}{
		{name: "no client certificate", config: noCert},
		{name: "certificate from another CA", config: stranger},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client(tt.config).Get(url)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
		})
	}
}

func TestServesPlainHTTPWithoutTLSConfig(t *testing.T) {
	_, addr := start(t, &http.Server{Handler: hello})
	resp, err := client(nil).Get("http://" + addr + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestSignalLetsInFlightRequestsFinish(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	process, addr := start(t, &http.Server{Handler: slow}, WithGracePeriod(time.Minute))

	type result struct {
		body string
		err  error
	}
	results := make(chan result, 1)
	go func() {
		resp, err := client(nil).Get("http://" + addr + "/")
		if err != nil {
			results <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		results <- result{body: string(body), err: err}
	}()
	<-entered
	process.Signal(os.Interrupt)
	close(release)

	got := <-results
	require.NoError(t, got.err)
	require.Equal(t, "done", got.body)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestGracePeriodBoundsSlowRequests(t *testing.T) {
	entered := make(chan struct{})
	stuck := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	})
	process, addr := start(t, &http.Server{Handler: stuck}, WithGracePeriod(100*time.Millisecond), WithName("stuck-server"))
	go func() {
		resp, err := client(nil).Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	process.Signal(os.Interrupt)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a stuck request held the server past its grace period")
	}
}

func TestFailures(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	tests := []struct {
		name   string
		runner ifrit.Runner
		want   string
	}{
		{name: "address taken", runner: New(&http.Server{Addr: taken.Addr().String(), Handler: hello}, nil), want: "listen"},
		{name: "nil server", runner: New(nil, nil), want: "nil"},
		{name: "nil listener", runner: FromListener(nil, &http.Server{}, nil), want: "nil listener"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			process := ifrit.Background(tt.runner)
			select {
			case err := <-process.Wait():
				require.ErrorContains(t, err, tt.want)
			case <-process.Ready():
				t.Fatal("ready despite the failure")
			}
		})
	}
}

func TestServerErrorsAreLoggedAsKebabCaseWarnings(t *testing.T) {
	serverTLS, clientTLS := certs(t)
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	process := ifrit.Invoke(FromListener(lis, &http.Server{Handler: hello, TLSConfig: serverTLS}, logger))
	t.Cleanup(func() { process.Signal(os.Kill); <-process.Wait() })

	noCert := clientTLS.Clone()
	noCert.Certificates = nil
	resp, err := client(noCert).Get("https://" + lis.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
	}
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `"msg":"http-server-error"`) &&
			strings.Contains(logs.String(), "TLS handshake error")
	}, 10*time.Second, 20*time.Millisecond)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
