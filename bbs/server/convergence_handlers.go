package server

import (
	"google.golang.org/grpc"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// convergenceService implements bbsv1.ConvergenceServiceServer.
type convergenceService struct {
	bbsv1.UnimplementedConvergenceServiceServer
	*Server
}

// Snapshot streams one consistent snapshot of the store, message by message as the
// store reads it.
func (s *convergenceService) Snapshot(_ *bbsv1.SnapshotRequest, stream grpc.ServerStreamingServer[bbsv1.SnapshotResponse]) error {
	return s.db.Snapshot(stream.Context(), stream.Send)
}
