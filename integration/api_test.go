package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/jsonapi"
	"drover.dev/devstack/devstacktest"
)

// TestSeedLRPLifecycleOverHTTP walks the seed's LRP API: desire the example, read it
// back field by field, list its 17 instances, scale to 3, kill one, delete it.
func TestSeedLRPLifecycleOverHTTP(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{})
	a := newAPI(t, s, 0)
	sent := seedJSON(t)
	const guid = "some-guid"

	a.expect(http.StatusCreated, http.MethodPost, "/v1/desired_lrps", sent, nil)

	t.Run("GET returns every field as sent", func(t *testing.T) {
		var want, got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sent, &want))
		a.expect(http.StatusOK, http.MethodGet, "/v1/desired_lrps/"+guid, nil, &got)
		for field, value := range want {
			require.Contains(t, got, field)
			require.JSONEq(t, string(value), string(got[field]), "field %s", field)
		}
		// routes are opaque JSON: they come back as the same bytes, whitespace aside.
		require.Equal(t, compact(t, want["routes"]), compact(t, got["routes"]))
	})

	t.Run("the list holds the LRP", func(t *testing.T) {
		var lrps []map[string]json.RawMessage
		a.expect(http.StatusOK, http.MethodGet, "/v1/desired_lrps?domain=some-domain", nil, &lrps)
		require.Len(t, lrps, 1)
		require.JSONEq(t, `"some-guid"`, string(lrps[0]["process_guid"]))
	})

	t.Run("17 UNCLAIMED instances with indices 0..16", func(t *testing.T) {
		lrps := a.actualLRPs(guid)
		require.Equal(t, indices(0, 17), indexesOf(lrps))
		for _, lrp := range lrps {
			require.Equal(t, "UNCLAIMED", lrp.State)
			require.Equal(t, "some-domain", lrp.Domain)
			require.NotZero(t, lrp.Since)
		}
		var atIndex []jsonapi.ActualLRP
		a.expect(http.StatusOK, http.MethodGet, "/v1/actual_lrps/"+guid+"/index/16", nil, &atIndex)
		require.Len(t, atIndex, 1)
		require.EqualValues(t, 16, atIndex[0].Index)
	})

	t.Run("scaling to 3 removes the UNCLAIMED extras at once", func(t *testing.T) {
		a.expect(http.StatusOK, http.MethodPut, "/v1/desired_lrps/"+guid, []byte(`{"instances": 3}`), nil)
		require.Equal(t, indices(0, 3), indexesOf(a.actualLRPs(guid)))
		var got map[string]json.RawMessage
		a.expect(http.StatusOK, http.MethodGet, "/v1/desired_lrps/"+guid, nil, &got)
		require.JSONEq(t, `3`, string(got["instances"]))
		require.JSONEq(t, string(mustField(t, sent, "routes")), string(got["routes"]), "routes survive a scale")
	})

	t.Run("killing an UNCLAIMED instance removes it", func(t *testing.T) {
		a.expect(http.StatusOK, http.MethodDelete, "/v1/actual_lrps/"+guid+"/index/2", nil, nil)
		require.Equal(t, indices(0, 2), indexesOf(a.actualLRPs(guid)))
	})

	t.Run("DELETE removes the LRP and its instances", func(t *testing.T) {
		a.expect(http.StatusOK, http.MethodDelete, "/v1/desired_lrps/"+guid, nil, nil)
		var e jsonapi.Error
		a.expect(http.StatusNotFound, http.MethodGet, "/v1/desired_lrps/"+guid, nil, &e)
		require.Equal(t, "ResourceNotFound", e.Type)
		require.Empty(t, a.actualLRPs(guid))
	})
}

// TestBadRequestsChangeNothing sends broken and invalid requests: each gets a JSON error
// with a 4xx status and no state changes.
func TestBadRequestsChangeNothing(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{})
	a := newAPI(t, s, 0)
	negative := bytes.Replace(seedJSON(t), []byte(`"instances": 17`), []byte(`"instances": -1`), 1)
	badGuid := bytes.Replace(seedJSON(t), []byte(`"some-guid"`), []byte(`"no spaces allowed"`), 1)
	tests := []struct {
		name, method, path string
		body               []byte
		status             int
		errType            string
	}{
		{"not JSON", http.MethodPost, "/v1/desired_lrps", []byte(`{"process_guid":`), http.StatusBadRequest, "InvalidJSON"},
		{"negative instances", http.MethodPost, "/v1/desired_lrps", negative, http.StatusBadRequest, "InvalidRequest"},
		{"invalid process guid", http.MethodPost, "/v1/desired_lrps", badGuid, http.StatusBadRequest, "InvalidRequest"},
		{"unknown LRP", http.MethodGet, "/v1/desired_lrps/missing", nil, http.StatusNotFound, "ResourceNotFound"},
		{"update of unknown LRP", http.MethodPut, "/v1/desired_lrps/missing", []byte(`{"instances": 1}`), http.StatusNotFound, "ResourceNotFound"},
		{"bad index", http.MethodDelete, "/v1/actual_lrps/some-guid/index/x", nil, http.StatusBadRequest, "InvalidRequest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e jsonapi.Error
			a.expect(tc.status, tc.method, tc.path, tc.body, &e)
			require.Equal(t, tc.errType, e.Type)
			require.NotEmpty(t, e.Message)
		})
	}
	var lrps []json.RawMessage
	a.expect(http.StatusOK, http.MethodGet, "/v1/desired_lrps", nil, &lrps)
	require.Empty(t, lrps)
	require.Empty(t, a.actualLRPs(""))
}

// indices returns from, from+1, ..., to-1.
func indices(from, to int32) []int32 {
	var out []int32
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// indexesOf returns the sorted indices of lrps.
func indexesOf(lrps []jsonapi.ActualLRP) []int32 {
	var out []int32
	for _, lrp := range lrps {
		out = append(out, lrp.Index)
	}
	slices.Sort(out)
	return out
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, raw))
	return b.String()
}

func mustField(t *testing.T, doc []byte, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &m))
	require.Contains(t, m, field)
	return m[field]
}
