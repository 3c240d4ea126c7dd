package runner

import (
	"context"

	"google.golang.org/grpc"

	"drover.dev/bbs/client"
	"drover.dev/bbs/server"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// BBS is what the runner needs from the BBS.
type BBS interface {
	// ListCells lists the live cells.
	ListCells(ctx context.Context) ([]*modelsv1.CellPresence, error)
	// FailActualLRP records an instance's placement error.
	FailActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, placementError string) error
	// RejectTask hands a task back with the reason it was not placed.
	RejectTask(ctx context.Context, taskGuid, reason string) error
}

// Rep is what the runner needs from a cell's rep (repv1.RepServiceClient has it).
type Rep interface {
	State(ctx context.Context, in *repv1.StateRequest, opts ...grpc.CallOption) (*repv1.StateResponse, error)
	Perform(ctx context.Context, in *repv1.PerformRequest, opts ...grpc.CallOption) (*repv1.PerformResponse, error)
}

// RepFactory gives the rep of a cell.
type RepFactory interface {
	Rep(cell *modelsv1.CellPresence) (Rep, error)
}

// NewBBS adapts the BBS gRPC client.
func NewBBS(c *client.Client) BBS { return bbsClient{c: c} }

type bbsClient struct{ c *client.Client }

func (b bbsClient) ListCells(ctx context.Context) ([]*modelsv1.CellPresence, error) {
	resp, err := b.c.ListCells(ctx, &bbsv1.ListCellsRequest{})
	return resp.GetCells(), err
}

func (b bbsClient) FailActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, placementError string) error {
	_, err := b.c.FailActualLRP(ctx, &bbsv1.FailActualLRPRequest{ActualLrpKey: key, ErrorMessage: placementError})
	return err
}

func (b bbsClient) RejectTask(ctx context.Context, taskGuid, reason string) error {
	_, err := b.c.RejectTask(ctx, &bbsv1.RejectTaskRequest{TaskGuid: taskGuid, RejectionReason: reason})
	return err
}

// NewRepFactory adapts the BBS's rep client factory (one mTLS connection per
// rep_address, shared with the BBS so that both dial reps the same way).
func NewRepFactory(f server.RepClientFactory) RepFactory { return repFactory{f: f} }

type repFactory struct{ f server.RepClientFactory }

func (r repFactory) Rep(cell *modelsv1.CellPresence) (Rep, error) { return r.f.RepClient(cell) }
