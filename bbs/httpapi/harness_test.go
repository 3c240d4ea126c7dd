package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"drover.dev/bbs/client"
	"drover.dev/bbs/httpapi"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// fakes are the BBS services behind the gateway under test.
type fakes struct {
	desired *fakeDesiredLRPs
	actual  *fakeActualLRPs
	tasks   *fakeTasks
	domains *fakeDomains
	cells   *fakeCells
	events  *fakeEvents
}

// harness is an HTTP gateway over a bufconn gRPC server with fake services.
type harness struct {
	*fakes
	url  string
	logs *syncBuffer
}

// newHarness starts the fakes (after setup fills them) and the gateway with opts; the
// gateway logs into h.logs unless opts has a logger.
func newHarness(t *testing.T, opts httpapi.Options, setup func(*fakes)) *harness {
	t.Helper()
	f := &fakes{
		desired: &fakeDesiredLRPs{},
		actual:  &fakeActualLRPs{},
		tasks:   &fakeTasks{},
		domains: &fakeDomains{},
		cells:   &fakeCells{},
		events:  newFakeEvents(),
	}
	if setup != nil {
		setup(f)
	}

	listener := bufconn.Listen(1 << 20)
	server := grpc.NewServer()
	bbsv1.RegisterDesiredLRPServiceServer(server, f.desired)
	bbsv1.RegisterActualLRPServiceServer(server, f.actual)
	bbsv1.RegisterTaskServiceServer(server, f.tasks)
	bbsv1.RegisterDomainServiceServer(server, f.domains)
	bbsv1.RegisterCellServiceServer(server, f.cells)
	bbsv1.RegisterEventServiceServer(server, f.events)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)

	bbs, err := client.New("passthrough:///bufnet", nil,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return listener.DialContext(ctx)
		}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bbs.Close() })

	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	web := httptest.NewServer(httpapi.New(bbs, opts))
	t.Cleanup(web.Close)
	return &harness{fakes: f, url: web.URL, logs: logs}
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request with an optional body and headers ("Name: value").
func (h *harness) do(t *testing.T, method, path, body string, headers ...string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for _, header := range headers {
		name, value, ok := strings.Cut(header, ":")
		require.True(t, ok, "header %q", header)
		req.Header.Add(name, strings.TrimSpace(value))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
