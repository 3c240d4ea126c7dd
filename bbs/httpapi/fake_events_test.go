package httpapi_test

import (
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// fakeEvents replays retained events after the cursor, then holds the stream open
// until the client leaves. Cursors before oldest get ResyncRequired.
type fakeEvents struct {
	bbsv1.UnimplementedEventServiceServer
	calls
	retained []*modelsv1.Event
	oldest   uint64
	// ended receives once per subscription that ended because its client left.
	ended chan struct{}
}

func newFakeEvents() *fakeEvents {
	return &fakeEvents{ended: make(chan struct{}, 16)}
}

func (f *fakeEvents) Subscribe(req *bbsv1.SubscribeRequest, stream bbsv1.EventService_SubscribeServer) error {
	f.record(req)
	if req.AfterSequence != nil {
		if req.GetAfterSequence() < f.oldest {
			return models.ErrResyncRequired
		}
		for _, e := range f.retained {
			if e.GetSequence() <= req.GetAfterSequence() {
				continue
			}
			if err := stream.Send(&bbsv1.SubscribeResponse{Event: e}); err != nil {
				return err
			}
		}
	}
	<-stream.Context().Done()
	f.ended <- struct{}{}
	return nil
}

// subscribeRequest shortens the recorded request type in tests.
type subscribeRequest = bbsv1.SubscribeRequest
