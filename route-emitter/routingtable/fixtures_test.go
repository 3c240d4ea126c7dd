package routingtable

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

const (
	running    = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	claimed    = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	ordinary   = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
	evacuating = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
	suspect    = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT
)

// cfRoutes builds a routes map with one cf-router entry per element.
func cfRoutes(t *testing.T, entries ...map[string]any) map[string]*structpb.Value {
	t.Helper()
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = e
	}
	v, err := structpb.NewValue(list)
	require.NoError(t, err)
	return map[string]*structpb.Value{CFRouterKey: v}
}

func route(port uint32, hosts ...string) map[string]any {
	hs := make([]any, len(hosts))
	for i, h := range hosts {
		hs[i] = h
	}
	return map[string]any{"hostnames": hs, "port": float64(port)}
}

// desiredLRP is a routed DesiredLRP "web" with tag index idx.
func desiredLRP(t *testing.T, instances int32, idx uint32, routes ...map[string]any) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid: "web", Domain: "cf-apps", LogGuid: "app-guid", Instances: instances,
		Routes: cfRoutes(t, routes...), ModificationTag: &modelsv1.ModificationTag{Epoch: "e", Index: idx},
	}
}

// actualLRP is a RUNNING routable row of "web" on 10.0.0.1 with 8080→(61000+index).
func actualLRP(index int32, presence modelsv1.ActualLRPPresence, idx uint32) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{
		ProcessGuid: "web", Index: index, Domain: "cf-apps", InstanceGuid: instanceGUID(index), CellId: "cell-1",
		State: running, Routable: true, Since: 1000 + int64(index), Presence: presence,
		ModificationTag: &modelsv1.ModificationTag{Epoch: "a", Index: idx},
		NetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{
			{ContainerPort: 8080, HostPort: 61000 + uint32(index)},
		}},
	}
}

func instanceGUID(index int32) string { return "ig-" + string(rune('a'+index)) }

func ev(payload any) *modelsv1.Event {
	e := &modelsv1.Event{}
	switch p := payload.(type) {
	case *modelsv1.DesiredLRP:
		e.Payload = &modelsv1.Event_DesiredLrpCreated{DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{DesiredLrp: p}}
	case *modelsv1.ActualLRP:
		e.Payload = &modelsv1.Event_ActualLrpInstanceCreated{ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: p}}
	}
	return e
}

func desiredChanged(before, after *modelsv1.DesiredLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpChanged{DesiredLrpChanged: &modelsv1.DesiredLRPChangedEvent{Before: before, After: after}}}
}

func desiredRemoved(d *modelsv1.DesiredLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{DesiredLrp: d}}}
}

func info(a *modelsv1.ActualLRP) *modelsv1.ActualLRPInfo {
	return &modelsv1.ActualLRPInfo{NetInfo: a.NetInfo, State: a.State, Since: a.Since, ModificationTag: a.ModificationTag,
		Presence: a.Presence, Routable: a.Routable, AvailabilityZone: a.AvailabilityZone}
}

func actualChanged(before, after *modelsv1.ActualLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{ActualLrpInstanceChanged: &modelsv1.ActualLRPInstanceChangedEvent{
		ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: after.ProcessGuid, Index: after.Index, Domain: after.Domain},
		ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: after.InstanceGuid, CellId: after.CellId},
		Before:               info(before), After: info(after),
	}}}
}

func actualRemoved(a *modelsv1.ActualLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceRemoved{ActualLrpInstanceRemoved: &modelsv1.ActualLRPInstanceRemovedEvent{ActualLrp: a}}}
}

// with returns a copy of a changed by f.
func with(a *modelsv1.ActualLRP, f func(a *modelsv1.ActualLRP)) *modelsv1.ActualLRP {
	c := &modelsv1.ActualLRP{}
	*c = modelsv1.ActualLRP{
		ProcessGuid: a.ProcessGuid, Index: a.Index, Domain: a.Domain, InstanceGuid: a.InstanceGuid, CellId: a.CellId,
		NetInfo: a.NetInfo, State: a.State, Since: a.Since, ModificationTag: a.ModificationTag, Presence: a.Presence,
		Routable: a.Routable, AvailabilityZone: a.AvailabilityZone,
	}
	f(c)
	return c
}

// brief is a message reduced to what the table tests compare.
type brief struct {
	URI      string
	Host     string
	Port     uint32
	Instance string
	Updated  int64
}

func briefs(ms []RegistryMessage) []brief {
	out := []brief{}
	for _, m := range ms {
		out = append(out, brief{m.URIs[0], m.Host, m.Port, m.PrivateInstanceID, m.EndpointUpdatedAtNs})
	}
	return out
}
