package callback_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"drover.dev/lib/authz"
	"drover.dev/lib/devcerts"
	"drover.dev/stager/callback"
)

// listener is the callback handler behind an mTLS httptest server, with a CA to mint
// client certificates from.
type listener struct {
	url      string
	ca       *devcerts.CA
	registry *callback.Registry
}

func pair(t *testing.T, ca *devcerts.CA, cn string, hosts []string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(cn, hosts)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func start(t *testing.T) *listener {
	t.Helper()
	ca, err := devcerts.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	reg := callback.NewRegistry()
	ts := httptest.NewUnstartedServer(callback.NewHandler(authz.DefaultNames(), reg, nil))
	ts.TLS = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair(t, ca, "stager", []string{"127.0.0.1"})},
		ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return &listener{url: ts.URL, ca: ca, registry: reg}
}

// client posts as cn ("" for no certificate).
func (l *listener) client(t *testing.T, cn string) *http.Client {
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: l.ca.Pool()}
	if cn != "" {
		cfg.Certificates = []tls.Certificate{pair(t, l.ca, cn, nil)}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func post(t *testing.T, c *http.Client, url, body string) (int, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const completion = `{"task_guid":"staging-a-1","failed":false,"failure_reason":"","result":"{}","annotation":"x","created_at":1}`

func TestOnlyTheBBSMayPost(t *testing.T) {
	l := start(t)
	done := make(chan struct{})
	got, stop := l.registry.Wait("staging-a-1")
	defer stop()
	url := l.url + "/v1/stagings/staging-a-1/completed"

	if code, msg := post(t, l.client(t, ""), url, completion); code != 0 {
		t.Errorf("without a certificate: %d %s, want a refused handshake", code, msg)
	}
	if code, msg := post(t, l.client(t, "cell:cell-1"), url, completion); code != http.StatusForbidden || !strings.Contains(msg, `cell "cell-1"`) {
		t.Errorf("cell certificate: %d %s, want 403", code, msg)
	}
	if code, msg := post(t, l.client(t, "drover-client"), url, completion); code != http.StatusForbidden {
		t.Errorf("operator certificate: %d %s, want 403", code, msg)
	}
	select {
	case c := <-got:
		t.Fatalf("delivered %+v to the waiter from a refused caller", c)
	default:
	}
	go func() {
		defer close(done)
		if code, msg := post(t, l.client(t, "bbs"), url, completion); code != http.StatusOK {
			t.Errorf("bbs certificate: %d %s, want 200", code, msg)
		}
	}()
	select {
	case c := <-got:
		if c.TaskGUID != "staging-a-1" || c.Result != "{}" || c.Annotation != "x" {
			t.Errorf("delivered %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no completion delivered")
	}
	<-done
}

func TestCallbackRequests(t *testing.T) {
	l := start(t)
	bbs := l.client(t, "bbs")
	_, stop := l.registry.Wait("staging-a-1")
	defer stop()
	cases := []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"known task", "/v1/stagings/staging-a-1/completed", completion, 200, ""},
		{"unknown task is accepted", "/v1/stagings/staging-zzz/completed", strings.Replace(completion, "staging-a-1", "staging-zzz", 1), 200, ""},
		{"guid differs from the path", "/v1/stagings/staging-b/completed", completion, 400, "differs from the path"},
		{"bad json", "/v1/stagings/staging-a-1/completed", `{"task_guid":`, 400, "not a JSON callback"},
		{"no guid", "/v1/stagings/staging-a-1/completed", `{"failed":true}`, 400, "task_guid is required"},
		{"trailing data", "/v1/stagings/staging-a-1/completed", completion + "{}", 400, "after the JSON object"},
		{"too large", "/v1/stagings/staging-a-1/completed", `{"result":"` + strings.Repeat("x", callback.MaxBodyBytes) + `"}`, 400, "too large"},
		{"other path", "/v1/other", completion, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := post(t, bbs, l.url+tc.path, tc.body)
			if code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Fatalf("got %d %q, want %d %q", code, msg, tc.code, tc.msg)
			}
		})
	}
	resp, err := bbs.Get(l.url + "/v1/stagings/staging-a-1/completed")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
}

func TestRegistryDeliversOnceAndForgets(t *testing.T) {
	r := callback.NewRegistry()
	ch, done := r.Wait("t")
	if !r.Deliver(callback.Completion{TaskGUID: "t", Failed: true}) || !r.Deliver(callback.Completion{TaskGUID: "t"}) {
		t.Fatal("a waiting task was not delivered")
	}
	if c := <-ch; !c.Failed {
		t.Errorf("first completion lost: %+v", c)
	}
	done()
	if r.Deliver(callback.Completion{TaskGUID: "t"}) {
		t.Error("delivered after done")
	}
}

func FuzzDecodeCallback(f *testing.F) {
	f.Add([]byte(completion))
	f.Add([]byte(`{"task_guid":"x","failed":true,"failure_reason":"boom"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := callback.DecodeCompletion(b)
		if err == nil && c.TaskGUID == "" {
			t.Fatal("accepted a callback without a task guid")
		}
		if err == nil && len(b) > callback.MaxBodyBytes {
			t.Fatal("accepted an oversized body")
		}
	})
}
