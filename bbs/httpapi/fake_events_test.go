package httpapi_test

import (
	"google.golang.org/grpc/metadata"

	"drover.dev/bbs/events"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// fakeEvents admits a subscription as the BBS does (response headers first), replays
// retained events after the cursor, then holds the stream open until the client leaves.
// Cursors before oldest get ResyncRequired; refuse, when set, refuses every
// subscription before admitting it.
type fakeEvents struct {
	bbsv1.UnimplementedEventServiceServer
	calls
	retained []*modelsv1.Event
	oldest   uint64
	refuse   error
	// identities receives the subscriber identity the gateway forwarded, per subscription.
	identities chan []string
	// ended receives once per subscription that ended because its client left.
	ended chan struct{}
}

func newFakeEvents() *fakeEvents {
	return &fakeEvents{ended: make(chan struct{}, 16), identities: make(chan []string, 16)}
}

func (f *fakeEvents) Subscribe(req *bbsv1.SubscribeRequest, stream bbsv1.EventService_SubscribeServer) error {
	f.record(req)
	md, _ := metadata.FromIncomingContext(stream.Context())
	notify(f.identities, md.Get(events.IdentityMetadataKey))
	if f.refuse != nil {
		return f.refuse
	}
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	if req.AfterSequence != nil {
		if req.GetAfterSequence() < f.oldest {
			return models.ErrResyncRequired
		}
		for _, e := range f.retained {
			if e.GetSequence() <= req.GetAfterSequence() {
				continue
			}
			if err := stream.Send(&bbsv1.SubscribeResponse{Event: e}); err != nil {
				notify(f.ended, struct{}{})
				return err
			}
		}
	}
	<-stream.Context().Done()
	notify(f.ended, struct{}{})
	return nil
}

// notify sends v unless the buffer of ch is full (nobody is looking any more).
func notify[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// subscribeRequest shortens the recorded request type in tests.
type subscribeRequest = bbsv1.SubscribeRequest
