package commands

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// repConn is the client of one cell's rep.
type repConn struct {
	cell   *modelsv1.CellPresence
	client repv1.RepServiceClient
}

// dialRep returns a client of the rep of cell from the session's pool, which dials
// over mutual TLS with droverctl's certificate (the one it presents to the BBS). The
// connection is made lazily by gRPC and closed with the session.
func (s *session) dialRep(cell *modelsv1.CellPresence) (*repConn, error) {
	if _, err := s.bbs(); err != nil {
		return nil, err
	}
	rep, err := s.reps.For(cell)
	if err != nil {
		return nil, err
	}
	return &repConn{cell: cell, client: rep}, nil
}

// listCells returns the live cells by id, sorted, bounded by --timeout.
func (s *session) listCells(ctx context.Context) ([]*modelsv1.CellPresence, error) {
	c, callCtx, cancel, err := s.begin(ctx)
	defer cancel()
	if err != nil {
		return nil, err
	}
	resp, err := c.ListCells(callCtx, &bbsv1.ListCellsRequest{})
	if err != nil {
		return nil, err
	}
	cells := resp.GetCells()
	sort.Slice(cells, func(i, j int) bool { return cells[i].GetCellId() < cells[j].GetCellId() })
	return cells, nil
}

// eachRep calls fn with a connection to the rep of every cell, in parallel, and returns
// the results in the order of cells. A cell whose rep cannot be dialled gets that error.
func eachRep[T any](s *session, cells []*modelsv1.CellPresence, fn func(*repConn) (T, error)) ([]T, []error) {
	results := make([]T, len(cells))
	errs := make([]error, len(cells))
	var wg sync.WaitGroup
	for i, cell := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc, err := s.dialRep(cell)
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = fn(rc)
		}()
	}
	wg.Wait()
	return results, errs
}

// repError types an error of a call to the rep of cell and names that rep (and the
// time limit when it did not answer), so that it is not reported as the BBS's.
func (s *session) repError(cell *modelsv1.CellPresence, err error) error {
	if status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled) {
		return err // interrupted: reported as such
	}
	e := models.FromError(err)
	msg := fmt.Sprintf("rep of cell %s at %s: %s", cell.GetCellId(), cell.GetRepAddress(), e.Message)
	if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("rep of cell %s at %s did not answer within %s (--timeout)", cell.GetCellId(), cell.GetRepAddress(), s.opts.timeout)
	}
	return &models.Error{Type: e.Type, Message: msg}
}
