package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"drover.dev/auctioneer/auction"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// cellSet is the cells that answered with a usable state, and their reps, plus the
// cordoned cells as their presences describe them (never asked, never placed on).
type cellSet struct {
	states   []auction.CellState
	reps     map[string]Rep
	cordoned []auction.CellState
}

// all is every cell for Place: the usable ones, then the cordoned ones.
func (c cellSet) all() []auction.CellState {
	return append(slices.Clip(c.states), c.cordoned...)
}

// fetchCells lists the live cells and fetches every cell's state in parallel; when no
// cell answers it tries again, FetchAttempts times in all (not when every cell is
// cordoned: none is asked). An error means the BBS could not list the cells.
func (r *Runner) fetchCells(ctx context.Context) (cellSet, error) {
	start := r.opts.Now()
	defer func() { r.opts.Metrics.FetchStatesDuration.Observe(time.Since(start).Seconds()) }()
	var cells cellSet
	for attempt := 1; attempt <= FetchAttempts; attempt++ {
		listCtx, cancel := context.WithTimeout(ctx, r.opts.CommunicationTimeout)
		presences, err := r.bbs.ListCells(listCtx)
		cancel()
		if err != nil {
			return cellSet{}, err
		}
		cells = r.fetchStates(ctx, presences)
		if len(cells.states) > 0 || (len(presences) > 0 && len(cells.cordoned) == len(presences)) || ctx.Err() != nil {
			return cells, nil
		}
		r.log.Info("no-cell-state-retrying", "attempt", attempt, "cells", len(presences))
	}
	return cells, nil
}

// fetchStates asks every cell that an operator has not cordoned for its state with the
// cell state timeout and keeps the cells that answered, are not evacuating and report
// the cell id of their presence; cordoned cells are kept from their presences. A cell's
// index is its position in the presence list (sorted by cell id).
func (r *Runner) fetchStates(ctx context.Context, presences []*modelsv1.CellPresence) cellSet {
	usable := make([]*auction.CellState, len(presences))
	reps := make([]Rep, len(presences))
	cells := cellSet{reps: map[string]Rep{}}
	for i, presence := range presences {
		if presence.GetCordoned() {
			r.log.Debug("cell-skipped-cordoned", "cell_id", presence.GetCellId(), "reason", presence.GetCordonReason())
			cells.cordoned = append(cells.cordoned, auction.CellFromPresence(presence, i))
		}
	}
	forEach(len(presences), r.opts.Workers, func(i int) {
		presence := presences[i]
		if presence.GetCordoned() {
			return
		}
		rep, state, err := r.fetchState(ctx, presence)
		if err != nil {
			r.opts.Metrics.FailedCellStateRequests.Inc()
			r.log.Info("cell-dropped-from-auction", "cell_id", presence.GetCellId(), "reason", err.Error())
			return
		}
		cell := auction.CellFromState(state, i)
		if cell.Zone == "" {
			cell.Zone = presence.GetZone()
		}
		usable[i], reps[i] = &cell, rep
	})
	for i, cell := range usable {
		if cell != nil {
			cells.states = append(cells.states, *cell)
			cells.reps[cell.CellID] = reps[i]
		}
	}
	return cells
}

// fetchState asks one cell for its state and says why it cannot take part.
func (r *Runner) fetchState(ctx context.Context, presence *modelsv1.CellPresence) (Rep, *repv1.StateResponse, error) {
	rep, err := r.reps.Rep(presence)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNoRep, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.CellStateTimeout)
	defer cancel()
	state, err := rep.State(ctx, &repv1.StateRequest{})
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("state request failed: %w", err)
	case state.GetEvacuating():
		return nil, nil, fmt.Errorf("cell is evacuating")
	case state.GetCellId() != presence.GetCellId():
		return nil, nil, fmt.Errorf("cell reports id %q, not its presence's %q", state.GetCellId(), presence.GetCellId())
	}
	return rep, state, nil
}
