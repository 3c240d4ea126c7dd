package jsonapi

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	return json.Marshal(fields)
}

// decodeStrict unmarshals data into m, turning every failure into an InvalidJSON error.
func decodeStrict(data []byte, m proto.Message, what string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return models.NewError(models.ErrTypeInvalidJSON, "invalid %s JSON: empty body", what)
	}
	if err := strictUnmarshal.Unmarshal(data, m); err != nil {
		return models.NewError(models.ErrTypeInvalidJSON, "invalid %s JSON: %s", what, protojsonReason(err))
	}
	return nil
}

// protojsonReason drops protojson's "proto:" prefix (followed by randomised spacing)
// from an error, keeping the position and the reason.
func protojsonReason(err error) string {
	return strings.TrimSpace(strings.TrimPrefix(err.Error(), "proto:"))
}

// marshalProto encodes m with proto names as compact JSON. protojson randomises its
// whitespace, so the output is compacted to be stable.
func marshalProto(m proto.Message) (json.RawMessage, error) {
	raw, err := protoNames.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", m, err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, fmt.Errorf("compacting %T JSON: %w", m, err)
	}
	return out.Bytes(), nil
}
