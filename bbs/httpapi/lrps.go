package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// desireLRP handles POST /v1/desired_lrps with the seed's DesiredLRPCreateRequest.
func (a *api) desireLRP(w http.ResponseWriter, r *http.Request) error {
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	lrp, err := jsonapi.DecodeDesiredLRP(body)
	if err != nil {
		return err
	}
	if _, err := a.bbs.DesireLRP(r.Context(), &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusCreated, emptyObject)
	return nil
}

// updateDesiredLRP handles PUT /v1/desired_lrps/{process_guid} with a DesiredLRPUpdateRequest.
func (a *api) updateDesiredLRP(w http.ResponseWriter, r *http.Request) error {
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	update, err := jsonapi.DecodeDesiredLRPUpdate(body)
	if err != nil {
		return err
	}
	req := &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: r.PathValue("process_guid"), Update: update}
	if _, err := a.bbs.UpdateDesiredLRP(r.Context(), req); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, emptyObject)
	return nil
}

// removeDesiredLRP handles DELETE /v1/desired_lrps/{process_guid}.
func (a *api) removeDesiredLRP(w http.ResponseWriter, r *http.Request) error {
	req := &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: r.PathValue("process_guid")}
	if _, err := a.bbs.RemoveDesiredLRP(r.Context(), req); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, emptyObject)
	return nil
}

// getDesiredLRP handles GET /v1/desired_lrps/{process_guid}.
func (a *api) getDesiredLRP(w http.ResponseWriter, r *http.Request) error {
	resp, err := a.bbs.GetDesiredLRP(r.Context(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: r.PathValue("process_guid")})
	if err != nil {
		return err
	}
	// The HTTP API is for people and bridges: image credentials are only for cells.
	lrp, err := jsonapi.EncodeDesiredLRP(models.DesiredLRPWithoutImageCredentials(resp.GetDesiredLrp()))
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, lrp)
	return nil
}

// listDesiredLRPs handles GET /v1/desired_lrps[?domain=].
func (a *api) listDesiredLRPs(w http.ResponseWriter, r *http.Request) error {
	req := &bbsv1.ListDesiredLRPsRequest{Domain: r.URL.Query().Get("domain")}
	resp, err := a.bbs.ListDesiredLRPs(r.Context(), req)
	if err != nil {
		return err
	}
	lrps := make([]json.RawMessage, 0, len(resp.GetDesiredLrps()))
	for _, lrp := range resp.GetDesiredLrps() {
		encoded, err := jsonapi.EncodeDesiredLRP(models.DesiredLRPWithoutImageCredentials(lrp))
		if err != nil {
			return err
		}
		lrps = append(lrps, encoded)
	}
	a.writeJSON(w, http.StatusOK, lrps)
	return nil
}

// listActualLRPs handles GET /v1/actual_lrps[?domain=&cell_id=&process_guid=].
func (a *api) listActualLRPs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	return a.writeActualLRPs(w, r, &bbsv1.ListActualLRPsRequest{
		Domain:      q.Get("domain"),
		CellId:      q.Get("cell_id"),
		ProcessGuid: q.Get("process_guid"),
	})
}

// listActualLRPsOfProcess handles GET /v1/actual_lrps/{process_guid}.
func (a *api) listActualLRPsOfProcess(w http.ResponseWriter, r *http.Request) error {
	return a.writeActualLRPs(w, r, &bbsv1.ListActualLRPsRequest{ProcessGuid: r.PathValue("process_guid")})
}

// getActualLRPsAtIndex handles GET /v1/actual_lrps/{process_guid}/index/{index}: every
// presence of that index, or 404 when there is none.
func (a *api) getActualLRPsAtIndex(w http.ResponseWriter, r *http.Request) error {
	index, err := pathIndex(r)
	if err != nil {
		return err
	}
	guid := r.PathValue("process_guid")
	lrps, err := a.fetchActualLRPs(r, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid, Index: &index})
	if err != nil {
		return err
	}
	if len(lrps) == 0 {
		return models.NewError(models.ErrTypeResourceNotFound, "no actual LRP at index %d of %q", index, guid)
	}
	a.writeJSON(w, http.StatusOK, lrps)
	return nil
}

// retireActualLRP handles DELETE /v1/actual_lrps/{process_guid}/index/{index}.
func (a *api) retireActualLRP(w http.ResponseWriter, r *http.Request) error {
	index, err := pathIndex(r)
	if err != nil {
		return err
	}
	key := &modelsv1.ActualLRPKey{ProcessGuid: r.PathValue("process_guid"), Index: index}
	if _, err := a.bbs.RetireActualLRP(r.Context(), &bbsv1.RetireActualLRPRequest{ActualLrpKey: key}); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, emptyObject)
	return nil
}

// writeActualLRPs answers with the views of every row req matches, in server order.
func (a *api) writeActualLRPs(w http.ResponseWriter, r *http.Request, req *bbsv1.ListActualLRPsRequest) error {
	lrps, err := a.fetchActualLRPs(r, req)
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, lrps)
	return nil
}

// fetchActualLRPs drains the ListActualLRPs stream into views (never nil).
func (a *api) fetchActualLRPs(r *http.Request, req *bbsv1.ListActualLRPsRequest) ([]jsonapi.ActualLRP, error) {
	views := []jsonapi.ActualLRP{}
	err := client.EachActualLRPBatch(r.Context(), a.bbs, req, func(batch *bbsv1.ListActualLRPsResponse) error {
		for _, lrp := range batch.GetActualLrps() {
			views = append(views, jsonapi.ActualLRPView(lrp))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return views, nil
}

// pathIndex parses the {index} path segment as a non-negative instance index.
func pathIndex(r *http.Request) (int32, error) {
	raw := r.PathValue("index")
	index, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || index < 0 {
		return 0, models.NewError(models.ErrTypeInvalidRequest, "index %q is not a non-negative integer", raw)
	}
	return int32(index), nil
}
