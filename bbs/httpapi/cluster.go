package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// upsertDomain handles PUT /v1/domains/{domain}: the domain is fresh for the
// Cache-Control max-age, or forever without the header.
func (a *api) upsertDomain(w http.ResponseWriter, r *http.Request) error {
	ttl, err := domainTTL(r.Header)
	if err != nil {
		return err
	}
	req := &bbsv1.UpsertDomainRequest{Domain: r.PathValue("domain"), TtlSeconds: ttl}
	if _, err := a.bbs.UpsertDomain(r.Context(), req); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, emptyObject)
	return nil
}

// domainTTL reads the freshness TTL in seconds from Cache-Control: max-age=N. No header
// (or an empty one) means forever, which is 0, as does max-age=0 (the gRPC API's
// convention); a header without a valid max-age is an
// InvalidRequest error.
func domainTTL(h http.Header) (uint32, error) {
	value := strings.TrimSpace(strings.Join(h.Values("Cache-Control"), ","))
	if value == "" {
		return 0, nil
	}
	for directive := range strings.SplitSeq(value, ",") {
		name, arg, hasArg := strings.Cut(strings.TrimSpace(directive), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "max-age") {
			continue
		}
		seconds, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(arg), `"`), 10, 64)
		if !hasArg || err != nil || seconds > math.MaxUint32 {
			return 0, models.NewError(models.ErrTypeInvalidRequest,
				"Cache-Control %q: max-age must be a whole number of seconds up to %d", value, uint32(math.MaxUint32))
		}
		return uint32(seconds), nil
	}
	return 0, models.NewError(models.ErrTypeInvalidRequest,
		"Cache-Control %q has no max-age=N; omit the header for a domain that never expires", value)
}

// listDomains handles GET /v1/domains: the fresh domains' names.
func (a *api) listDomains(w http.ResponseWriter, r *http.Request) error {
	resp, err := a.bbs.ListDomains(r.Context(), &bbsv1.ListDomainsRequest{})
	if err != nil {
		return err
	}
	domains := append([]string{}, resp.GetDomains()...)
	a.writeJSON(w, http.StatusOK, domains)
	return nil
}

// listCells handles GET /v1/cells.
func (a *api) listCells(w http.ResponseWriter, r *http.Request) error {
	resp, err := a.bbs.ListCells(r.Context(), &bbsv1.ListCellsRequest{})
	if err != nil {
		return err
	}
	cells := make([]jsonapi.Cell, 0, len(resp.GetCells()))
	for _, cell := range resp.GetCells() {
		cells = append(cells, jsonapi.CellView(cell))
	}
	a.writeJSON(w, http.StatusOK, cells)
	return nil
}
