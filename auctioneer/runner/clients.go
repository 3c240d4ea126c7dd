package runner

import (
	"context"

	"google.golang.org/grpc"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	repclient "drover.dev/rep/client"
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

// NewRepFactory adapts the rep client pool (one mTLS connection per rep_address, the
// way the BBS and droverctl dial reps too).
func NewRepFactory(p *repclient.Pool) RepFactory { return repFactory{p: p} }

type repFactory struct{ p *repclient.Pool }

func (r repFactory) Rep(cell *modelsv1.CellPresence) (Rep, error) { return r.p.For(cell) }
