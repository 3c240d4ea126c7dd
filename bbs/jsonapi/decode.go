package jsonapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// strictUnmarshal rejects unknown fields; protojson accepts both the snake_case proto
// names the seed uses and the lowerCamel JSON names.
var strictUnmarshal = protojson.UnmarshalOptions{DiscardUnknown: false}

// protoNames marshals with the proto field names (snake_case), as the seed writes them.
var protoNames = protojson.MarshalOptions{UseProtoNames: true}

// DecodeDesiredLRP decodes a DesiredLRPCreateRequest as the seed writes it. Unknown
// fields and malformed JSON are an InvalidJSON error whose message says what is wrong.
func DecodeDesiredLRP(data []byte) (*modelsv1.DesiredLRP, error) {
	lrp := &modelsv1.DesiredLRP{}
	if err := decodeStrict(data, lrp, "desired LRP"); err != nil {
		return nil, err
	}
	return lrp, nil
}

// DecodeDesiredLRPUpdate decodes a DesiredLRPUpdateRequest
// ({"instances": 3, "routes": {...}, "annotation": "..."}).
func DecodeDesiredLRPUpdate(data []byte) (*modelsv1.DesiredLRPUpdate, error) {
	update := &modelsv1.DesiredLRPUpdate{}
	if err := decodeStrict(data, update, "desired LRP update"); err != nil {
		return nil, err
	}
	return update, nil
}

// DecodeDesireTask decodes a task request ({task_guid, domain, task_definition: {...}}).
func DecodeDesireTask(data []byte) (*bbsv1.DesireTaskRequest, error) {
	req := &bbsv1.DesireTaskRequest{}
	if err := decodeStrict(data, req, "task"); err != nil {
		return nil, err
	}
	return req, nil
}

// DecodeCordonReason decodes the body of a cordon (PUT /v1/cells/{cell_id}/cordon):
// empty, or {"reason": "..."}. Unknown fields, a reason that is not a string and
// anything after the object are an InvalidJSON error.
func DecodeCordonReason(data []byte) (string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", nil
	}
	var body struct {
		Reason string `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return "", models.NewError(models.ErrTypeInvalidJSON, "invalid cordon JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", models.NewError(models.ErrTypeInvalidJSON, "invalid cordon JSON: data after the object")
	}
	return body.Reason, nil
}

// EncodeDesiredLRP encodes a DesiredLRP in the seed's shape (snake_case, routes as the
// opaque JSON they were sent as). Zero-valued fields are left out, except instances,
// which always appears. A nil DesiredLRP encodes as an empty object.
func EncodeDesiredLRP(lrp *modelsv1.DesiredLRP) (json.RawMessage, error) {
	raw, err := marshalProto(lrp)
	if err != nil {
		return nil, err
	}
	if lrp.GetInstances() != 0 {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("re-reading desired LRP JSON: %w", err)
	}
	fields["instances"] = json.RawMessage("0")
	return compactJSON(fields)
}

// decodeStrict unmarshals data into m, turning every failure into an InvalidJSON error:
// an empty body, arrays and objects nested deeper than models.MaxJSONDepth (refused
// before decoding), malformed JSON, unknown fields, wrong types, and numbers given as
// strings (each one named).
func decodeStrict(data []byte, m proto.Message, what string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return models.NewError(models.ErrTypeInvalidJSON, "invalid %s JSON: empty body", what)
	}
	if at := nestingExceeds(data, models.MaxJSONDepth); at >= 0 {
		return models.NewError(models.ErrTypeInvalidJSON,
			"invalid %s JSON: arrays and objects must nest at most %d levels deep (exceeded at byte %d)", what, models.MaxJSONDepth, at)
	}
	if err := strictUnmarshal.Unmarshal(data, m); err != nil {
		return models.NewError(models.ErrTypeInvalidJSON, "invalid %s JSON: %s", what, protojsonReason(err))
	}
	bad, err := quotedNumbers(data, m.ProtoReflect().Descriptor())
	if err != nil {
		return models.NewError(models.ErrTypeInvalidJSON, "invalid %s JSON: %v", what, err)
	}
	if len(bad) > 0 {
		return models.NewError(models.ErrTypeInvalidJSON, "invalid %s JSON: %s", what, strings.Join(bad, "; "))
	}
	return nil
}

// protojsonReason drops protojson's "proto:" prefix (followed by randomised spacing)
// from an error, keeping the position and the reason.
func protojsonReason(err error) string {
	return strings.TrimSpace(strings.TrimPrefix(err.Error(), "proto:"))
}

// marshalProto encodes m with proto names as compact JSON whose integers are all JSON
// numbers (protojson writes 64-bit ones as strings, which the decoder refuses).
// protojson randomises its whitespace; the output is re-encoded, so it is stable.
func marshalProto(m proto.Message) (json.RawMessage, error) {
	raw, err := protoNames.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", m, err)
	}
	return unquoteIntegers(raw, m.ProtoReflect().Descriptor())
}
