package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/staging"
)

// Serves reports whether an uncordoned cell has the stack's preloaded rootfs.
func Serves(cell *modelsv1.CellPresence, stack staging.Stack) bool {
	name, ok := strings.CutPrefix(stack.RootFS, "preloaded:")
	if !ok || cell.GetCordoned() {
		return false
	}
	for _, p := range cell.GetRootfsProviders() {
		if p.GetName() == "preloaded" && slices.Contains(p.GetProperties(), name) {
			return true
		}
	}
	return false
}

// cells lists the live cells.
func (s *Server) cells(ctx context.Context) ([]*modelsv1.CellPresence, error) {
	resp, err := s.opts.BBS.ListCells(ctx, &bbsv1.ListCellsRequest{})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "listing cells on the BBS: %v", status.Convert(err).Message())
	}
	return resp.GetCells(), nil
}

// servingCells are the ids of the cells that serve stack.
func servingCells(cells []*modelsv1.CellPresence, stack staging.Stack) []string {
	var ids []string
	for _, c := range cells {
		if Serves(c, stack) {
			ids = append(ids, c.GetCellId())
		}
	}
	return ids
}

// ListStacks lists the configured stacks and the uncordoned cells serving each.
func (s *Server) ListStacks(ctx context.Context, _ *stagerv1.ListStacksRequest) (*stagerv1.ListStacksResponse, error) {
	cells, err := s.cells(ctx)
	if err != nil {
		return nil, err
	}
	resp := &stagerv1.ListStacksResponse{}
	for _, st := range s.cfg.Stacks {
		resp.Stacks = append(resp.Stacks, &stagerv1.Stack{Name: st.Name, Rootfs: st.RootFS, User: st.User,
			Default: st.Name == s.cfg.DefaultStack, Cells: servingCells(cells, st)})
	}
	return resp, nil
}

// noCell is the error of a stack no cell serves.
func noCell(stack string, known bool, names []string) error {
	if !known {
		return status.Errorf(codes.FailedPrecondition, "no cell serves stack %q (unknown stack; known: %s)", stack, strings.Join(names, ", "))
	}
	return status.Error(codes.FailedPrecondition, fmt.Sprintf("no cell serves stack %q", stack))
}
