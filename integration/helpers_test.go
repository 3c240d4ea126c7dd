package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/devstack"
	"drover.dev/lib/testenv"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// seedFixture is the seed's DesiredLRPCreateRequest example: 17 instances, actions filled in.
const seedFixture = "testdata/seed_000_desired_lrp.json"

// seedJSON returns the fixture's bytes.
func seedJSON(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(seedFixture)
	require.NoError(t, err)
	return data
}

// seedLRP decodes the fixture the way the HTTP API does, renamed to guid with the given
// number of instances.
func seedLRP(t *testing.T, guid string, instances int32) *modelsv1.DesiredLRP {
	t.Helper()
	lrp, err := jsonapi.DecodeDesiredLRP(seedJSON(t))
	require.NoError(t, err)
	lrp.ProcessGuid = guid
	lrp.Instances = instances
	return lrp
}

// api calls one BBS's HTTPS API with the dev client certificate.
type api struct {
	t      *testing.T
	client *http.Client
	base   string
}

func newAPI(t *testing.T, s *devstack.Stack, replica int) *api {
	t.Helper()
	c, err := s.HTTPClient()
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return &api{t: t, client: c, base: s.BBS[replica].HTTPURL()}
}

// do sends a request and returns the status and body; header holds extra headers.
func (a *api) do(method, path string, body []byte, header http.Header) (int, []byte) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	require.NoError(a.t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	require.NoError(a.t, err, "%s %s", method, path)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp.StatusCode, data
}

// expect sends a request, requires the status, and decodes the JSON answer into out
// (when out is not nil).
func (a *api) expect(wantStatus int, method, path string, body []byte, out any) {
	a.t.Helper()
	status, data := a.do(method, path, body, nil)
	require.Equal(a.t, wantStatus, status, "%s %s answered %s", method, path, data)
	if out != nil {
		require.NoError(a.t, json.Unmarshal(data, out), "%s %s answered %s", method, path, data)
	}
}

// actualLRPs lists the ActualLRPs of a process over HTTP.
func (a *api) actualLRPs(guid string) []jsonapi.ActualLRP {
	a.t.Helper()
	var lrps []jsonapi.ActualLRP
	a.expect(http.StatusOK, http.MethodGet, "/v1/actual_lrps?process_guid="+guid, nil, &lrps)
	return lrps
}

// domains lists the fresh domains over HTTP.
func (a *api) domains() []string {
	a.t.Helper()
	var domains []string
	a.expect(http.StatusOK, http.MethodGet, "/v1/domains", nil, &domains)
	return domains
}

// listActualLRPs drains the ListActualLRPs stream.
func listActualLRPs(t *testing.T, c *client.Client, req *bbsv1.ListActualLRPsRequest) []*modelsv1.ActualLRP {
	t.Helper()
	stream, err := c.ListActualLRPs(callCtx(t), req)
	require.NoError(t, err)
	var out []*modelsv1.ActualLRP
	for {
		batch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, batch.GetActualLrps()...)
	}
}

// callCtx bounds one gRPC call of a test.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// grpcurlPath returns the grpcurl that scripts/install-deps.sh installs. It is a
// prerequisite: its absence skips the test (testenv.Missing), or fails it in make test.
func grpcurlPath(t *testing.T) string {
	t.Helper()
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	path := filepath.Join(devstack.BinDir(root), "grpcurl")
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(t, "grpcurl", fmt.Sprintf("not at %s: run scripts/install-deps.sh", path))
	}
	return path
}
