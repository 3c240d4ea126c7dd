package httpapi

import (
	"net/http"

	"drover.dev/bbs/jsonapi"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// cordonCell handles PUT /v1/cells/{cell_id}/cordon with {"reason": "..."}: the cell
// takes no new work until it is uncordoned.
func (a *api) cordonCell(w http.ResponseWriter, r *http.Request) error {
	data, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	reason, err := jsonapi.DecodeCordonReason(data)
	if err != nil {
		return err
	}
	req := &bbsv1.CordonCellRequest{CellId: r.PathValue("cell_id"), Reason: reason}
	if _, err := a.bbs.CordonCell(r.Context(), req); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, emptyObject)
	return nil
}

// uncordonResponse is the JSON answer of DELETE /v1/cells/{cell_id}/cordon.
type uncordonResponse struct {
	WasCordoned bool `json:"was_cordoned"`
}

// uncordonCell handles DELETE /v1/cells/{cell_id}/cordon; lifting no cordon is not an
// error, and the answer says whether there was one.
func (a *api) uncordonCell(w http.ResponseWriter, r *http.Request) error {
	resp, err := a.bbs.UncordonCell(r.Context(), &bbsv1.UncordonCellRequest{CellId: r.PathValue("cell_id")})
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, uncordonResponse{WasCordoned: resp.GetWasCordoned()})
	return nil
}
