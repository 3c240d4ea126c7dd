package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ActualLRPLister is the part of the BBS API that lists ActualLRPs: the Client, or a
// component's fake.
type ActualLRPLister interface {
	ListActualLRPs(ctx context.Context, in *bbsv1.ListActualLRPsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.ListActualLRPsResponse], error)
}

// Drain reads a server stream to its end, handing every message to f in order. It
// returns nil at the end of the stream, or the first error of the stream or of f.
func Drain[T any](stream grpc.ServerStreamingClient[T], f func(*T) error) error {
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(msg); err != nil {
			return err
		}
	}
}

// EachActualLRPBatch lists the ActualLRPs req selects and hands every batch of the
// stream to f, in order (see Drain).
func EachActualLRPBatch(ctx context.Context, l ActualLRPLister, req *bbsv1.ListActualLRPsRequest, f func(*bbsv1.ListActualLRPsResponse) error) error {
	stream, err := l.ListActualLRPs(ctx, req)
	if err != nil {
		return err
	}
	return Drain(stream, f)
}

// AllActualLRPs returns every ActualLRP req selects, in the order the BBS streams them.
func AllActualLRPs(ctx context.Context, l ActualLRPLister, req *bbsv1.ListActualLRPsRequest) ([]*modelsv1.ActualLRP, error) {
	var out []*modelsv1.ActualLRP
	err := EachActualLRPBatch(ctx, l, req, func(batch *bbsv1.ListActualLRPsResponse) error {
		out = append(out, batch.GetActualLrps()...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
