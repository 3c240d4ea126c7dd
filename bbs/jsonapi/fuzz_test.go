package jsonapi_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// The fuzz targets feed each request decoder of the HTTP API arbitrary bytes. A body is
// refused with an InvalidJSON error, or it decodes into a request that validation
// refuses with an InvalidRequest error, or into a valid request whose events decode
// where protobuf stops at 100 levels and whose JSON encoding decodes back to it. Nothing
// may panic. scripts/test.sh runs each briefly.

// subscriberDecoder decodes events as the strictest subscriber would (C++ and Java
// protobuf stop at 100 levels).
var subscriberDecoder = proto.UnmarshalOptions{RecursionLimit: 100}

func FuzzDecodeDesiredLRP(f *testing.F) {
	f.Add(readFixtureF(f, "desired_lrp_seed.json"))
	for _, s := range []string{
		`{"routes": {"x": null}}`,
		`{"action": {"serial": {"actions": [{"try": {}}]}}}`,
		`{"process_guid": "p", "domain": "d", "rootfs": "preloaded:x", "instances": "3", "action": {"run": {"path": "/x", "user": "u"}}}`,
		`{"process_guid": "p", "domain": "d", "rootfs": "preloaded:x", "action": {"timeout": {"timeout_ms": "5", "action": {"run": {"path": "/x", "user": "u"}}}}}`,
		`{"process_guid": "p", "domain": "cf\u0000apps", "rootfs": "preloaded:x", "ports": [8080, 8080], "action": {"run": {"path": "/x", "user": "u"}}}`,
		`{"routes": {"r": [[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]}}`,
		`{"created_at": 1795315210062074322, "log_rate_limit": {"bytes_per_second": -1}, "check_definition": {"checks": [{"tcp_check": {"port": 80, "interval_ms": 18446744073709551615}}]}}`,
		`{"action": ` + strings.Repeat(`{"serial": {"actions": [`, 40) + `{"run": {}}` + strings.Repeat(`]}}`, 40) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lrp, err := jsonapi.DecodeDesiredLRP(data)
		if err != nil {
			requireType(t, err, models.ErrTypeInvalidJSON)
			return
		}
		encoded, err := jsonapi.EncodeDesiredLRP(lrp)
		require.NoError(t, err)
		again, err := jsonapi.DecodeDesiredLRP(encoded)
		require.NoError(t, err, "re-decoding %s", encoded)
		require.True(t, proto.Equal(lrp, again), "round trip through %s", encoded)

		if !validRequest(t, &bbsv1.DesireLRPRequest{DesiredLrp: lrp}) {
			return
		}
		requireDecodableEvent(t, models.DesiredLRPCreatedEvent(lrp))
	})
}

func FuzzDecodeDesiredLRPUpdate(f *testing.F) {
	f.Add(readFixtureF(f, "desired_lrp_update_seed.json"))
	for _, s := range []string{
		`{"instances": 3}`, `{"instances": "3"}`, `{"instances": 10001}`, `{"instances": -1}`,
		`{"annotation": "a\u0000"}`, `{"clear_routes": true}`, `{"routes": {"r": {"k": [1, {"x": null}]}}}`,
		`{"metric_tags": {"index": {"dynamic": "DYNAMIC_INDEX"}}}`, `{"image_username": "u", "image_password": "p"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		update, err := jsonapi.DecodeDesiredLRPUpdate(data)
		if err != nil {
			requireType(t, err, models.ErrTypeInvalidJSON)
			return
		}
		if !validRequest(t, &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "some-guid", Update: update}) {
			return
		}
		before := &modelsv1.DesiredLRP{ProcessGuid: "some-guid", Domain: "d", Rootfs: "preloaded:x"}
		after := models.ApplyDesiredLRPUpdate(before, update)
		requireDecodableEvent(t, models.DesiredLRPChangedEvent(before, after))
	})
}

func FuzzDecodeDesireTask(f *testing.F) {
	f.Add(readFixtureF(f, "desire_task.json"))
	for _, s := range []string{
		`{"task_guid": "t", "task_defintion": {}}`,
		`{"task_guid": "t", "domain": "d", "task_definition": {"memory_mb": "64"}}`,
		`{"task_guid": "t", "domain": "d", "task_definition": {"rootfs": "docker:///x", "action": {"run": {"path": "/x", "user": "u", "resource_limits": {"nofile": "1024"}}}}}`,
		`{"task_guid": "t", "domain": "d", "task_definition": {"rootfs": "docker:///x", "placement_tags": ["a\u001b"], "action": {"download": {"from": "f", "to": "t", "user": "u"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := jsonapi.DecodeDesireTask(data)
		if err != nil {
			requireType(t, err, models.ErrTypeInvalidJSON)
			return
		}
		if !validRequest(t, req) {
			return
		}
		task := &modelsv1.Task{TaskGuid: req.GetTaskGuid(), Domain: req.GetDomain(), TaskDefinition: req.GetTaskDefinition()}
		requireDecodableEvent(t, models.TaskCreatedEvent(task))

		// The task's view holds the definition in the shape the decoder takes.
		view, err := jsonapi.TaskView(task)
		require.NoError(t, err)
		body, err := json.Marshal(map[string]any{"task_guid": task.GetTaskGuid(), "domain": task.GetDomain(), "task_definition": view.TaskDefinition})
		require.NoError(t, err)
		again, err := jsonapi.DecodeDesireTask(body)
		require.NoError(t, err, "re-decoding %s", body)
		require.True(t, proto.Equal(req, again), "round trip through %s", body)
	})
}

func FuzzDecodeCordonReason(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"reason": "kernel upgrade"}`, `{"reason": 3}`, `{"why": "x"}`, `{"reason": "a"} {}`, `{"reason": "\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reason, err := jsonapi.DecodeCordonReason(data)
		if err != nil {
			requireType(t, err, models.ErrTypeInvalidJSON)
			return
		}
		validRequest(t, &bbsv1.CordonCellRequest{CellId: "cell-1", Reason: reason})
	})
}

// validRequest reports whether req passes validation; a refusal must be InvalidRequest.
func validRequest(t *testing.T, req proto.Message) bool {
	t.Helper()
	err := models.ValidateRequest(req)
	if err != nil {
		requireType(t, err, models.ErrTypeInvalidRequest)
		return false
	}
	return true
}

// requireDecodableEvent checks that an event survives the wire to the strictest
// subscriber unchanged.
func requireDecodableEvent(t *testing.T, event *modelsv1.Event) {
	t.Helper()
	wire, err := proto.Marshal(&bbsv1.SubscribeResponse{Event: event})
	require.NoError(t, err)
	decoded := &bbsv1.SubscribeResponse{}
	require.NoError(t, subscriberDecoder.Unmarshal(wire, decoded))
	require.True(t, proto.Equal(event, decoded.GetEvent()))
	_, err = jsonapi.EventView(event)
	require.NoError(t, err)
}

// requireType checks that err is a *models.Error of type want with a message.
func requireType(t *testing.T, err error, want models.ErrorType) {
	t.Helper()
	var e *models.Error
	require.True(t, errors.As(err, &e), "untyped error %v", err)
	require.Equal(t, want, e.Type, "error %v", err)
	require.NotEmpty(t, e.Message)
}
