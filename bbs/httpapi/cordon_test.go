package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/httpapi"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func (f *fakeCells) CordonCell(_ context.Context, req *bbsv1.CordonCellRequest) (*bbsv1.CordonCellResponse, error) {
	f.record(req)
	return &bbsv1.CordonCellResponse{}, errorForGUID(req.GetCellId())
}

func (f *fakeCells) UncordonCell(_ context.Context, req *bbsv1.UncordonCellRequest) (*bbsv1.UncordonCellResponse, error) {
	f.record(req)
	if err := errorForGUID(req.GetCellId()); err != nil {
		return nil, err
	}
	return &bbsv1.UncordonCellResponse{WasCordoned: req.GetCellId() == "cell-1"}, nil
}

func TestCordonRoutes(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)

	t.Run("cordon with a reason", func(t *testing.T) {
		resp := h.do(t, http.MethodPut, "/v1/cells/cell-1/cordon", `{"reason": "kernel upgrade"}`)
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		require.JSONEq(t, `{}`, resp.body)
		req := lastCall[*bbsv1.CordonCellRequest](t, &h.cells.calls)
		require.Equal(t, "cell-1", req.GetCellId())
		require.Equal(t, "kernel upgrade", req.GetReason())
	})

	t.Run("cordon without a body", func(t *testing.T) {
		resp := h.do(t, http.MethodPut, "/v1/cells/cell-2/cordon", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		req := lastCall[*bbsv1.CordonCellRequest](t, &h.cells.calls)
		require.Equal(t, "cell-2", req.GetCellId())
		require.Empty(t, req.GetReason())
	})

	t.Run("bad bodies are refused before the BBS", func(t *testing.T) {
		for _, body := range []string{`{"reason": 3}`, `{"why": "x"}`, `not json`} {
			before := len(h.cells.all())
			resp := h.do(t, http.MethodPut, "/v1/cells/cell-1/cordon", body)
			requireError(t, resp, http.StatusBadRequest, "InvalidJSON")
			require.Len(t, h.cells.all(), before, "body %s", body)
		}
	})

	t.Run("BBS errors map to statuses", func(t *testing.T) {
		resp := h.do(t, http.MethodPut, "/v1/cells/err-InvalidRequest/cordon", `{}`)
		requireError(t, resp, http.StatusBadRequest, "InvalidRequest")
		resp = h.do(t, http.MethodDelete, "/v1/cells/err-Unavailable/cordon", "")
		requireError(t, resp, http.StatusServiceUnavailable, "Unavailable")
	})

	t.Run("uncordon says whether there was a cordon", func(t *testing.T) {
		resp := h.do(t, http.MethodDelete, "/v1/cells/cell-1/cordon", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		require.JSONEq(t, `{"was_cordoned": true}`, resp.body)
		require.Equal(t, "cell-1", lastCall[*bbsv1.UncordonCellRequest](t, &h.cells.calls).GetCellId())
		resp = h.do(t, http.MethodDelete, "/v1/cells/cell-9/cordon", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		require.JSONEq(t, `{"was_cordoned": false}`, resp.body)
	})
}

func TestListCellsShowsCordons(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.cells.cells = []*modelsv1.CellPresence{{CellId: "cell-1", RepAddress: "10.0.0.1:1800", Cordoned: true, CordonReason: "maintenance"}}
	})
	resp := h.do(t, http.MethodGet, "/v1/cells", "")
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.JSONEq(t, `[{"cell_id": "cell-1", "rep_address": "10.0.0.1:1800", "capacity": {"memory_mb": 0, "disk_mb": 0, "containers": 0},
		"expires_at": 0, "cordoned": true, "cordon_reason": "maintenance"}]`, resp.body)
}
