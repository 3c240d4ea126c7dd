package client_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// batchLister streams batches, then ends with err (nil: io.EOF).
type batchLister struct {
	batches [][]string
	err     error
	req     *bbsv1.ListActualLRPsRequest
}

func (l *batchLister) ListActualLRPs(_ context.Context, in *bbsv1.ListActualLRPsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.ListActualLRPsResponse], error) {
	l.req = in
	return &batchStream{batches: l.batches, err: l.err}, nil
}

type batchStream struct {
	grpc.ClientStream
	batches [][]string
	err     error
}

func (s *batchStream) Recv() (*bbsv1.ListActualLRPsResponse, error) {
	if len(s.batches) == 0 {
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	}
	resp := &bbsv1.ListActualLRPsResponse{}
	for _, guid := range s.batches[0] {
		resp.ActualLrps = append(resp.ActualLrps, &modelsv1.ActualLRP{ProcessGuid: guid})
	}
	s.batches = s.batches[1:]
	return resp, nil
}

// refusingLister fails the call itself.
type refusingLister struct{}

func (refusingLister) ListActualLRPs(context.Context, *bbsv1.ListActualLRPsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.ListActualLRPsResponse], error) {
	return nil, status.Error(codes.Unavailable, "down")
}

func guids(lrps []*modelsv1.ActualLRP) []string {
	out := []string{}
	for _, l := range lrps {
		out = append(out, l.GetProcessGuid())
	}
	return out
}

func TestAllActualLRPsReadsEveryBatch(t *testing.T) {
	l := &batchLister{batches: [][]string{{"a", "b"}, {}, {"c"}}}
	req := &bbsv1.ListActualLRPsRequest{CellId: "cell-1"}
	lrps, err := client.AllActualLRPs(t.Context(), l, req)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, guids(lrps))
	assert.Same(t, req, l.req)
}

func TestAllActualLRPsFails(t *testing.T) {
	broken := status.Error(codes.Internal, "broken stream")
	lrps, err := client.AllActualLRPs(t.Context(), &batchLister{batches: [][]string{{"a"}}, err: broken}, &bbsv1.ListActualLRPsRequest{})
	assert.Equal(t, broken, err, "the stream's error")
	assert.Nil(t, lrps, "nothing of a partial list")
	_, err = client.AllActualLRPs(t.Context(), refusingLister{}, &bbsv1.ListActualLRPsRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "the call's error")
}

func TestEachActualLRPBatchStopsAtTheCallbacksError(t *testing.T) {
	stop := errors.New("enough")
	var sizes []int
	err := client.EachActualLRPBatch(t.Context(), &batchLister{batches: [][]string{{"a", "b"}, {"c"}, {"d"}}}, &bbsv1.ListActualLRPsRequest{},
		func(b *bbsv1.ListActualLRPsResponse) error {
			sizes = append(sizes, len(b.GetActualLrps()))
			if len(sizes) == 2 {
				return stop
			}
			return nil
		})
	assert.Equal(t, stop, err)
	assert.Equal(t, []int{2, 1}, sizes)
}
