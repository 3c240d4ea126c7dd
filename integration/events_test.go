package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// eventWait bounds the wait for the next event of a stream.
const eventWait = 30 * time.Second

// sentinelGuid names the LRP desired last: its created event ends every read.
const sentinelGuid = "sentinel"

// subscribe streams events after `after` (nil: only new ones) into the returned
// channel until ctx ends; a stream error ends it with a nil event.
func subscribe(ctx context.Context, t *testing.T, c *client.Client, after *uint64) <-chan *modelsv1.Event {
	t.Helper()
	stream, err := c.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: after})
	require.NoError(t, err)
	out := make(chan *modelsv1.Event)
	go func() {
		defer close(out)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case out <- resp.GetEvent():
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// receive reads n events, failing when one takes longer than eventWait.
func receive(t *testing.T, events <-chan *modelsv1.Event, n int) []*modelsv1.Event {
	t.Helper()
	var got []*modelsv1.Event
	for len(got) < n {
		got = append(got, next(t, events, len(got)))
	}
	return got
}

// receiveUntilSentinel reads events up to and including the sentinel's created event.
func receiveUntilSentinel(t *testing.T, events <-chan *modelsv1.Event) []*modelsv1.Event {
	t.Helper()
	var got []*modelsv1.Event
	for {
		e := next(t, events, len(got))
		got = append(got, e)
		if e.GetDesiredLrpCreated().GetDesiredLrp().GetProcessGuid() == sentinelGuid {
			return got
		}
	}
}

func next(t *testing.T, events <-chan *modelsv1.Event, have int) *modelsv1.Event {
	t.Helper()
	select {
	case e, ok := <-events:
		require.True(t, ok, "the event stream ended after %d events", have)
		return e
	case <-time.After(eventWait):
		t.Fatalf("no event within %s after %d events", eventWait, have)
		return nil
	}
}

// eventKey is what two streams must agree on: the sequence and the type.
type eventKey struct {
	Sequence uint64
	Type     string
}

func keysOf(events []*modelsv1.Event) []eventKey {
	var out []eventKey
	for _, e := range events {
		out = append(out, eventKey{e.GetSequence(), models.EventType(e)})
	}
	return out
}

// TestEventsResumeAcrossReplicas drives an LRP through desire, scale, claim, start,
// crash and removal on replica A while a subscriber on A is killed after k events and
// resumes on replica B with its last sequence: together the two parts are exactly the
// full stream, with no gap and no repeat, and the SSE stream carries the same events.
func TestEventsResumeAcrossReplicas(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{Replicas: 2})
	replicaA, replicaB := devstacktest.Client(t, s, 0), devstacktest.Client(t, s, 1)
	const guid, k = "lrp-events", 7
	zero := uint64(0)

	subscriberCtx, killSubscriber := context.WithCancel(t.Context())
	onA := subscribe(subscriberCtx, t, replicaA, &zero)

	_, err := replicaA.DesireLRP(callCtx(t), &bbsv1.DesireLRPRequest{DesiredLrp: seedLRP(t, guid, 17)})
	require.NoError(t, err)
	firstPart := receive(t, onA, k)
	killSubscriber()
	last := firstPart[k-1].GetSequence()

	// Written while nobody listens.
	three := int32(3)
	_, err = replicaA.UpdateDesiredLRP(callCtx(t), &bbsv1.UpdateDesiredLRPRequest{
		ProcessGuid: guid, Update: &modelsv1.DesiredLRPUpdate{Instances: &three},
	})
	require.NoError(t, err)

	onB := subscribe(t.Context(), t, replicaB, &last)
	crashInstance(t, replicaA, guid)
	_, err = replicaA.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
	require.NoError(t, err)
	_, err = replicaA.DesireLRP(callCtx(t), &bbsv1.DesireLRPRequest{DesiredLrp: seedLRP(t, sentinelGuid, 0)})
	require.NoError(t, err)
	secondPart := receiveUntilSentinel(t, onB)

	reference := receiveUntilSentinel(t, subscribe(t.Context(), t, replicaB, &zero))
	requireGapFree(t, reference, 1)
	resumed := append(append([]*modelsv1.Event{}, firstPart...), secondPart...)
	require.Equal(t, keysOf(reference), keysOf(resumed), "killed-and-resumed subscriber vs one full stream")
	for i := range reference {
		require.True(t, proto.Equal(reference[i], resumed[i]), "event %d differs between streams", reference[i].GetSequence())
	}

	types := map[string]int{}
	for _, key := range keysOf(reference) {
		types[key.Type]++
	}
	for _, want := range []string{
		"desired_lrp_created", "desired_lrp_changed", "desired_lrp_removed",
		"actual_lrp_instance_created", "actual_lrp_instance_changed", "actual_lrp_instance_removed",
		"actual_lrp_crashed",
	} {
		require.Positive(t, types[want], "no %s event in %v", want, types)
	}
	require.Equal(t, 17+1, types["actual_lrp_instance_created"], "17 instances, then 1 restarted after its crash")

	t.Run("the SSE stream agrees with the gRPC stream", func(t *testing.T) {
		for _, replica := range []int{0, 1} {
			for _, after := range []uint64{0, last} {
				var want []eventKey
				for _, key := range keysOf(reference) {
					if key.Sequence > after {
						want = append(want, key)
					}
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				var got []eventKey
				for e := range streamSSE(ctx, t, newAPI(t, s, replica), after) {
					var body struct {
						Sequence uint64 `json:"sequence"`
						Type     string `json:"type"`
					}
					require.NoError(t, json.Unmarshal(e.Data, &body), "data of event %d", e.ID)
					require.Equal(t, eventKey{e.ID, e.Event}, eventKey{body.Sequence, body.Type}, "id/event lines vs data")
					got = append(got, eventKey{e.ID, e.Event})
					if len(got) == len(want) {
						break
					}
				}
				cancel()
				require.Equal(t, want, got, "SSE of replica %d after %d", replica, after)
			}
		}
	})
}

// requireGapFree checks that events are numbered first, first+1, ... in order.
func requireGapFree(t *testing.T, events []*modelsv1.Event, first uint64) {
	t.Helper()
	for i, e := range events {
		require.Equal(t, first+uint64(i), e.GetSequence(), "event %d of %d", i, len(events))
	}
}

// TestEventsFromConcurrentWritersOnTwoReplicas writes on both replicas at once while a
// subscriber listens on one: it sees every event of both, once each, gap-free.
func TestEventsFromConcurrentWritersOnTwoReplicas(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{Replicas: 2})
	clients := []*client.Client{devstacktest.Client(t, s, 0), devstacktest.Client(t, s, 1)}
	const perWriter, instances = 15, 2
	zero := uint64(0)
	onA := subscribe(t.Context(), t, clients[0], &zero)

	errs := make(chan error, len(clients))
	for w, c := range clients {
		base := seedLRP(t, "base", instances)
		go func() {
			for i := range perWriter {
				lrp := proto.CloneOf(base)
				lrp.ProcessGuid = fmt.Sprintf("writer-%d-lrp-%d", w, i)
				if _, err := c.DesireLRP(t.Context(), &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		require.NoError(t, <-errs)
	}
	// Each desire is one desired_lrp_created and one actual_lrp_instance_created per instance.
	want := len(clients) * perWriter * (1 + instances)
	got := receive(t, onA, want)
	requireGapFree(t, got, 1)
	created := map[string]bool{}
	for _, e := range got {
		if guid := e.GetDesiredLrpCreated().GetDesiredLrp().GetProcessGuid(); guid != "" {
			require.False(t, created[guid], "%s created twice", guid)
			created[guid] = true
		}
	}
	require.Len(t, created, len(clients)*perWriter)
}

// crashInstance claims and starts index 0 on a cell and reports its crash.
func crashInstance(t *testing.T, c *client.Client, guid string) {
	t.Helper()
	key := &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: 0, Domain: "some-domain"}
	instance := &modelsv1.ActualLRPInstanceKey{InstanceGuid: "instance-0", CellId: "cell-1"}
	_, err := c.ClaimActualLRP(callCtx(t), &bbsv1.ClaimActualLRPRequest{ProcessGuid: guid, Index: 0, ActualLrpInstanceKey: instance})
	require.NoError(t, err)
	_, err = c.StartActualLRP(callCtx(t), &bbsv1.StartActualLRPRequest{
		ActualLrpKey:         key,
		ActualLrpInstanceKey: instance,
		ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{
			Address: "10.0.0.5",
			Ports:   []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61001}},
		},
	})
	require.NoError(t, err)
	_, err = c.CrashActualLRP(callCtx(t), &bbsv1.CrashActualLRPRequest{
		ActualLrpKey: key, ActualLrpInstanceKey: instance, ErrorMessage: "exit status 1",
	})
	require.NoError(t, err)
}
