package server

import (
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	"drover.dev/bbs/events"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// eventService implements bbsv1.EventServiceServer.
type eventService struct {
	bbsv1.UnimplementedEventServiceServer
	*Server
}

// Subscribe streams events after the request's cursor until the client goes away; a
// cursor older than retention ends the stream with OUT_OF_RANGE (models.ErrResyncRequired),
// a subscriber that does not take an event within the send timeout with UNAVAILABLE
// (events.SlowSubscriberError), and one over its identity's cap is refused with
// RESOURCE_EXHAUSTED before the response headers are sent. The headers of an admitted
// subscription name the sequence it starts after (client.AfterSequenceHeader): a
// subscriber without a cursor learns there where its stream starts, so that it can read
// state no older than that and resume from it.
func (s *eventService) Subscribe(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
	if s.hub == nil {
		return status.Error(codes.Unavailable, "event hub not configured")
	}
	cellID, visible := eventScope(stream.Context(), req.GetCellId()) // a cell sees its own events only
	return s.hub.Subscribe(stream.Context(), events.Subscription{
		After:    req.AfterSequence,
		CellID:   cellID,
		Identity: subscriberIdentity(stream.Context()),
		Admitted: func(after uint64) {
			_ = stream.SendHeader(metadata.Pairs(client.AfterSequenceHeader, strconv.FormatUint(after, 10)))
		},
	}, func(e *modelsv1.Event) error {
		if !visible(e) {
			return nil
		}
		return stream.Send(&bbsv1.SubscribeResponse{Event: e})
	})
}
