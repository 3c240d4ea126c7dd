package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/bbs/httpapi"
	"drover.dev/bbs/jsonapi"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestDesireLRPTakesTheSeedJSON(t *testing.T) {
	seed, err := os.ReadFile("../jsonapi/testdata/desired_lrp_seed.json")
	require.NoError(t, err)
	h := newHarness(t, httpapi.Options{}, nil)

	resp := h.do(t, http.MethodPost, "/v1/desired_lrps", string(seed))
	require.Equal(t, http.StatusCreated, resp.status, resp.body)
	require.JSONEq(t, `{}`, resp.body)
	require.Equal(t, "application/json", resp.header.Get("Content-Type"))

	reqs := h.desired.all()
	require.Len(t, reqs, 1)
	lrp := reqs[0].(*bbsv1.DesireLRPRequest).GetDesiredLrp()
	require.Equal(t, "some-guid", lrp.GetProcessGuid())
	require.EqualValues(t, 17, lrp.GetInstances())
	require.Equal(t, "/bin/sh", lrp.GetAction().GetRun().GetPath())
	require.Len(t, lrp.GetRoutes(), 2)
}

func TestDesireLRPRejectsBadJSONBeforeTheBBS(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)
	tests := []struct {
		name    string
		body    string
		mention string
	}{
		{"unknown field", `{"process_guid": "p", "memory_megabytes": 5}`, "memory_megabytes"},
		{"malformed", `{"process_guid": `, "invalid desired LRP JSON"},
		{"empty", ``, "empty body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := requireError(t, h.do(t, http.MethodPost, "/v1/desired_lrps", tt.body), http.StatusBadRequest, "InvalidJSON")
			require.Contains(t, body.Message, tt.mention)
		})
	}
	require.Empty(t, h.desired.all())

	t.Run("BBS validation errors pass through", func(t *testing.T) {
		resp := h.do(t, http.MethodPost, "/v1/desired_lrps", `{"process_guid": "err-InvalidRequest"}`)
		requireError(t, resp, http.StatusBadRequest, "InvalidRequest")
	})
}

func TestUpdateAndRemoveDesiredLRP(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)

	resp := h.do(t, http.MethodPut, "/v1/desired_lrps/web", `{"instances": 0, "routes": {"cf-router": []}, "annotation": "v2"}`)
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	resp = h.do(t, http.MethodDelete, "/v1/desired_lrps/web", "")
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	requireError(t, h.do(t, http.MethodPut, "/v1/desired_lrps/web", `{"instance": 2}`), http.StatusBadRequest, "InvalidJSON")
	requireError(t, h.do(t, http.MethodDelete, "/v1/desired_lrps/err-ResourceNotFound", ""), http.StatusNotFound, "ResourceNotFound")

	reqs := h.desired.all()
	require.Len(t, reqs, 3)
	update := reqs[0].(*bbsv1.UpdateDesiredLRPRequest)
	require.Equal(t, "web", update.GetProcessGuid())
	require.NotNil(t, update.GetUpdate().Instances, "instances 0 is an explicit scale-down")
	require.Zero(t, update.GetUpdate().GetInstances())
	require.Equal(t, "v2", update.GetUpdate().GetAnnotation())
	require.Contains(t, update.GetUpdate().GetRoutes(), "cf-router")
	require.Equal(t, "web", reqs[1].(*bbsv1.RemoveDesiredLRPRequest).GetProcessGuid())
}

func TestGetAndListDesiredLRPs(t *testing.T) {
	routes := map[string]*structpb.Value{"cf-router": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
		structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"hostnames": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("a.example.com")}}),
			"port":      structpb.NewNumberValue(8080),
		}}),
	}})}
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.desired.lrps = []*modelsv1.DesiredLRP{
			{ProcessGuid: "api", Domain: "cf", Instances: 2, Routes: routes},
			{ProcessGuid: "worker", Domain: "jobs", Instances: 0},
		}
	})

	resp := h.do(t, http.MethodGet, "/v1/desired_lrps/api", "")
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.JSONEq(t, `{"process_guid": "api", "domain": "cf", "instances": 2,
		"routes": {"cf-router": [{"hostnames": ["a.example.com"], "port": 8080}]}}`, resp.body)

	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"api", "worker"}},
		{"?domain=jobs", []string{"worker"}},
		{"?domain=none", []string{}},
	}
	for _, tt := range tests {
		t.Run("list"+tt.query, func(t *testing.T) {
			resp := h.do(t, http.MethodGet, "/v1/desired_lrps"+tt.query, "")
			require.Equal(t, http.StatusOK, resp.status, resp.body)
			var lrps []map[string]any
			require.NoError(t, json.Unmarshal([]byte(resp.body), &lrps))
			require.NotNil(t, lrps, "an empty list is [], not null")
			guids := []string{}
			for _, lrp := range lrps {
				guids = append(guids, lrp["process_guid"].(string))
				require.Contains(t, lrp, "instances")
			}
			require.Equal(t, tt.want, guids)
		})
	}
}

func actualLRP(guid string, index int32, cell string, state modelsv1.ActualLRPState) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{
		ProcessGuid: guid, Index: index, Domain: "cf", InstanceGuid: guid + "-ig", CellId: cell, State: state,
		Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, Since: 1234567,
	}
}

func TestActualLRPs(t *testing.T) {
	running := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.actual.batches = [][]*modelsv1.ActualLRP{
			{actualLRP("web", 1, "cell-b", running), actualLRP("web", 0, "cell-a", running)},
			{actualLRP("db", 0, "cell-a", running)},
		}
	})

	t.Run("list keeps server order across batches and passes filters", func(t *testing.T) {
		resp := h.do(t, http.MethodGet, "/v1/actual_lrps?domain=cf&cell_id=cell-a&process_guid=", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		var lrps []jsonapi.ActualLRP
		require.NoError(t, json.Unmarshal([]byte(resp.body), &lrps))
		require.Len(t, lrps, 3)
		require.Equal(t, []string{"web", "web", "db"}, []string{lrps[0].ProcessGUID, lrps[1].ProcessGUID, lrps[2].ProcessGUID})
		require.Equal(t, []int32{1, 0, 0}, []int32{lrps[0].Index, lrps[1].Index, lrps[2].Index})
		require.EqualValues(t, 1234567, lrps[0].Since)
		req := lastCall[*bbsv1.ListActualLRPsRequest](t, &h.actual.calls)
		require.Equal(t, "cf", req.GetDomain())
		require.Equal(t, "cell-a", req.GetCellId())
		require.Nil(t, req.Index)
	})

	t.Run("by process guid", func(t *testing.T) {
		resp := h.do(t, http.MethodGet, "/v1/actual_lrps/db", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		var lrps []jsonapi.ActualLRP
		require.NoError(t, json.Unmarshal([]byte(resp.body), &lrps))
		require.Len(t, lrps, 1)
		require.Equal(t, "db-ig", lrps[0].InstanceGUID)
	})

	t.Run("by index", func(t *testing.T) {
		resp := h.do(t, http.MethodGet, "/v1/actual_lrps/web/index/0", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		var lrps []map[string]any
		require.NoError(t, json.Unmarshal([]byte(resp.body), &lrps))
		require.Len(t, lrps, 1)
		require.Equal(t, float64(0), lrps[0]["index"], "index 0 is always present")
		require.Equal(t, "cell-a", lrps[0]["cell_id"])
		req := lastCall[*bbsv1.ListActualLRPsRequest](t, &h.actual.calls)
		require.NotNil(t, req.Index)
		require.Zero(t, req.GetIndex())
	})

	t.Run("missing index is 404", func(t *testing.T) {
		requireError(t, h.do(t, http.MethodGet, "/v1/actual_lrps/web/index/7", ""), http.StatusNotFound, "ResourceNotFound")
	})

	for _, bad := range []string{"-1", "x", "99999999999"} {
		t.Run("bad index "+bad, func(t *testing.T) {
			requireError(t, h.do(t, http.MethodGet, "/v1/actual_lrps/web/index/"+bad, ""), http.StatusBadRequest, "InvalidRequest")
			requireError(t, h.do(t, http.MethodDelete, "/v1/actual_lrps/web/index/"+bad, ""), http.StatusBadRequest, "InvalidRequest")
		})
	}

	t.Run("retire", func(t *testing.T) {
		resp := h.do(t, http.MethodDelete, "/v1/actual_lrps/web/index/1", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		key := lastCall[*bbsv1.RetireActualLRPRequest](t, &h.actual.calls).GetActualLrpKey()
		require.Equal(t, "web", key.GetProcessGuid())
		require.EqualValues(t, 1, key.GetIndex())
		requireError(t, h.do(t, http.MethodDelete, "/v1/actual_lrps/err-ResourceNotFound/index/1", ""), http.StatusNotFound, "ResourceNotFound")
	})
}

// lastCall is the last recorded request of type T.
func lastCall[T any](t *testing.T, c *calls) T {
	t.Helper()
	reqs := c.all()
	for i := len(reqs) - 1; i >= 0; i-- {
		if req, ok := reqs[i].(T); ok {
			return req
		}
	}
	var zero T
	require.Failf(t, "no call", "no %T recorded", zero)
	return zero
}
