package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// stateVersion is the version of the adoption state written with each container.
const stateVersion = 1

// adoptionState is what the engine stores with a container (ContainerSpec.State) to
// adopt it after a restart. Action trees are protojson.
type adoptionState struct {
	Version     int               `json:"version"`
	Resource    executor.Resource `json:"resource"`
	Tags        map[string]string `json:"tags"`
	AllocatedAt time.Time         `json:"allocated_at"`
	RunInfo     runInfoState      `json:"run_info"`
}

type runInfoState struct {
	RootFS             string            `json:"rootfs"`
	CPUWeight          uint32            `json:"cpu_weight"`
	Privileged         bool              `json:"privileged"`
	Ports              []uint32          `json:"ports"`
	Env                []executor.EnvVar `json:"env"`
	CachedDependencies []json.RawMessage `json:"cached_dependencies,omitempty"`
	Setup              json.RawMessage   `json:"setup,omitempty"`
	Action             json.RawMessage   `json:"action,omitempty"`
	Monitor            json.RawMessage   `json:"monitor,omitempty"`
	CheckDefinition    json.RawMessage   `json:"check_definition,omitempty"`
	StartTimeout       time.Duration     `json:"start_timeout"`
	EgressRules        []json.RawMessage `json:"egress_rules,omitempty"`
	LogGuid            string            `json:"log_guid"`
	LogIndex           int               `json:"log_index"`
	LogSource          string            `json:"log_source"`
}

// marshalMsg encodes a message, nil for a nil one.
func marshalMsg(m proto.Message) (json.RawMessage, error) {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil, nil
	}
	return protojson.Marshal(m)
}

func marshalList[M proto.Message](ms []M) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(ms))
	for _, m := range ms {
		raw, err := marshalMsg(m)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

// unmarshalMsg decodes into a new message, nil for empty input.
func unmarshalMsg[M proto.Message](raw json.RawMessage, newM func() M) (M, error) {
	var zero M
	if len(raw) == 0 {
		return zero, nil
	}
	m := newM()
	if err := protojson.Unmarshal(raw, m); err != nil {
		return zero, err
	}
	return m, nil
}

func unmarshalList[M proto.Message](raws []json.RawMessage, newM func() M) ([]M, error) {
	var out []M
	for _, raw := range raws {
		m, err := unmarshalMsg(raw, newM)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// encodeState writes the adoption state of a container.
func encodeState(c executor.Container) ([]byte, error) {
	ri := c.RunInfo
	st := adoptionState{Version: stateVersion, Resource: c.Resource, Tags: c.Tags, AllocatedAt: c.AllocatedAt,
		RunInfo: runInfoState{
			RootFS: ri.RootFS, CPUWeight: ri.CPUWeight, Privileged: ri.Privileged, Ports: ri.Ports, Env: ri.Env,
			StartTimeout: ri.StartTimeout, LogGuid: ri.LogGuid, LogIndex: ri.LogIndex, LogSource: ri.LogSource,
		}}
	var err error
	enc := func(dst *json.RawMessage, m proto.Message) {
		if err == nil {
			*dst, err = marshalMsg(m)
		}
	}
	enc(&st.RunInfo.Setup, ri.Setup)
	enc(&st.RunInfo.Action, ri.Action)
	enc(&st.RunInfo.Monitor, ri.Monitor)
	enc(&st.RunInfo.CheckDefinition, ri.CheckDefinition)
	if err != nil {
		return nil, err
	}
	if st.RunInfo.CachedDependencies, err = marshalList(ri.CachedDependencies); err != nil {
		return nil, err
	}
	if st.RunInfo.EgressRules, err = marshalList(ri.EgressRules); err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// decodeState reads an adoption state; a missing, foreign or broken state fails.
func decodeState(data []byte) (adoptionState, *executor.RunInfo, error) {
	var st adoptionState
	if len(data) == 0 {
		return st, nil, fmt.Errorf("no adoption state")
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, nil, fmt.Errorf("decoding adoption state: %w", err)
	}
	if st.Version != stateVersion {
		return st, nil, fmt.Errorf("adoption state version %d, want %d", st.Version, stateVersion)
	}
	s := st.RunInfo
	ri := &executor.RunInfo{
		RootFS: s.RootFS, CPUWeight: s.CPUWeight, Privileged: s.Privileged, Ports: s.Ports, Env: s.Env,
		StartTimeout: s.StartTimeout, LogGuid: s.LogGuid, LogIndex: s.LogIndex, LogSource: s.LogSource,
	}
	newAction := func() *modelsv1.Action { return &modelsv1.Action{} }
	var err error
	dec := func(dst **modelsv1.Action, raw json.RawMessage) {
		if err == nil {
			*dst, err = unmarshalMsg(raw, newAction)
		}
	}
	dec(&ri.Setup, s.Setup)
	dec(&ri.Action, s.Action)
	dec(&ri.Monitor, s.Monitor)
	if err == nil {
		ri.CheckDefinition, err = unmarshalMsg(s.CheckDefinition, func() *modelsv1.CheckDefinition { return &modelsv1.CheckDefinition{} })
	}
	if err == nil {
		ri.CachedDependencies, err = unmarshalList(s.CachedDependencies, func() *modelsv1.CachedDependency { return &modelsv1.CachedDependency{} })
	}
	if err == nil {
		ri.EgressRules, err = unmarshalList(s.EgressRules, func() *modelsv1.EgressRule { return &modelsv1.EgressRule{} })
	}
	if err != nil {
		return st, nil, fmt.Errorf("decoding adoption state: %w", err)
	}
	if ri.Action == nil {
		return st, nil, fmt.Errorf("adoption state has no action")
	}
	return st, ri, nil
}
