package server

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// eventService implements bbsv1.EventServiceServer.
type eventService struct {
	bbsv1.UnimplementedEventServiceServer
	*Server
}

// Subscribe streams events after the request's cursor until the client goes away; a
// cursor older than retention ends the stream with OUT_OF_RANGE (models.ErrResyncRequired).
func (s *eventService) Subscribe(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
	if s.hub == nil {
		return status.Error(codes.Unavailable, "event hub not configured")
	}
	return s.hub.Subscribe(stream.Context(), req.AfterSequence, req.GetCellId(), func(e *modelsv1.Event) error {
		return stream.Send(&bbsv1.SubscribeResponse{Event: e})
	})
}
