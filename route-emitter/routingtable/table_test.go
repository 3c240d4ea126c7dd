package routingtable

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestApplyEvent: each case applies setup events, then one event, and checks the
// messages of that last event.
func TestApplyEvent(t *testing.T) {
	d1 := desiredLRP(t, 2, 1, route(8080, "a.example.com"))
	a0, a1 := actualLRP(0, ordinary, 1), actualLRP(1, ordinary, 1)
	reg := func(uri string, index int32, updated int64) brief {
		return brief{uri, "10.0.0.1", 61000 + uint32(index), instanceGUID(index), updated}
	}
	none := []brief{}
	cases := []struct {
		name      string
		setup     []*modelsv1.Event
		event     *modelsv1.Event
		reg, unrg []brief
	}{
		{"desired without instances registers nothing", nil, ev(d1), none, none},
		{"running instance registers with its since", []*modelsv1.Event{ev(d1)}, ev(a0), []brief{reg("a.example.com", 0, 1000)}, none},
		{"instance before desired registers once the desired comes, without since",
			[]*modelsv1.Event{ev(a0)}, ev(d1), []brief{reg("a.example.com", 0, 0)}, none},
		{"claimed instance registers nothing", []*modelsv1.Event{ev(d1)},
			ev(with(a0, func(a *modelsv1.ActualLRP) { a.State = claimed })), none, none},
		{"unroutable instance registers nothing", []*modelsv1.Event{ev(d1)},
			ev(with(a0, func(a *modelsv1.ActualLRP) { a.Routable = false })), none, none},
		{"instance without a mapping for the route's port registers nothing", []*modelsv1.Event{ev(d1)},
			ev(with(a0, func(a *modelsv1.ActualLRP) {
				a.NetInfo = &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{{ContainerPort: 9090, HostPort: 1}}}
			})), none, none},
		{"claimed to running registers", []*modelsv1.Event{ev(d1), ev(with(a0, func(a *modelsv1.ActualLRP) { a.State = claimed }))},
			actualChanged(with(a0, func(a *modelsv1.ActualLRP) { a.State = claimed }), with(a0, func(a *modelsv1.ActualLRP) {
				a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 2}
			})), []brief{reg("a.example.com", 0, 1000)}, none},
		{"running to crashed unregisters", []*modelsv1.Event{ev(d1), ev(a0)},
			actualChanged(a0, with(a0, func(a *modelsv1.ActualLRP) {
				a.State = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
				a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 2}
			})), none, []brief{reg("a.example.com", 0, 0)}},
		{"running turned unroutable unregisters", []*modelsv1.Event{ev(d1), ev(a0)},
			actualChanged(a0, with(a0, func(a *modelsv1.ActualLRP) {
				a.Routable = false
				a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 2}
			})), none, []brief{reg("a.example.com", 0, 0)}},
		{"an older actual change is ignored", []*modelsv1.Event{ev(d1), ev(with(a0, func(a *modelsv1.ActualLRP) {
			a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 5}
		}))}, actualChanged(a0, with(a0, func(a *modelsv1.ActualLRP) {
			a.State = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
			a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 3}
		})), none, none},
		{"removed running instance unregisters", []*modelsv1.Event{ev(d1), ev(a0), ev(a1)}, actualRemoved(a1), none, []brief{reg("a.example.com", 1, 0)}},
		{"removing an unknown instance changes nothing", []*modelsv1.Event{ev(d1)}, actualRemoved(a1), none, none},
		{"a hostname added registers every endpoint for it only, without since", []*modelsv1.Event{ev(d1), ev(a0), ev(a1)},
			desiredChanged(d1, desiredLRP(t, 2, 2, route(8080, "a.example.com", "b.example.com"))),
			[]brief{reg("b.example.com", 0, 0), reg("b.example.com", 1, 0)}, none},
		{"a hostname replaced registers the new and unregisters the old", []*modelsv1.Event{ev(d1), ev(a0)},
			desiredChanged(d1, desiredLRP(t, 2, 2, route(8080, "b.example.com"))),
			[]brief{reg("b.example.com", 0, 0)}, []brief{reg("a.example.com", 0, 0)}},
		{"an older desired change is ignored", []*modelsv1.Event{ev(desiredLRP(t, 2, 5, route(8080, "a.example.com"))), ev(a0)},
			desiredChanged(d1, desiredLRP(t, 2, 3, route(8080, "b.example.com"))), none, none},
		{"scale down unregisters indices at or above the new count at once", []*modelsv1.Event{ev(d1), ev(a0), ev(a1)},
			desiredChanged(d1, desiredLRP(t, 1, 2, route(8080, "a.example.com"))), none, []brief{reg("a.example.com", 1, 0)}},
		{"an instance above the desired count stays unregistered",
			[]*modelsv1.Event{ev(d1), ev(a0), desiredChanged(d1, desiredLRP(t, 1, 2, route(8080, "a.example.com")))},
			ev(a1), none, none},
		{"desired removed unregisters all", []*modelsv1.Event{ev(d1), ev(a0), ev(a1)}, desiredRemoved(d1),
			none, []brief{reg("a.example.com", 0, 0), reg("a.example.com", 1, 0)}},
		{"an evacuating copy at the same address registers and keeps the address",
			[]*modelsv1.Event{ev(d1), ev(a0)}, ev(with(a0, func(a *modelsv1.ActualLRP) { a.Presence = evacuating })),
			[]brief{reg("a.example.com", 0, 1000)}, none},
		{"ordinary to evacuating at the same address never unregisters the address",
			[]*modelsv1.Event{ev(d1), ev(a0)}, actualChanged(a0, with(a0, func(a *modelsv1.ActualLRP) {
				a.Presence = evacuating
				a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 2}
			})), []brief{reg("a.example.com", 0, 1000)}, none},
		{"the evacuating copy removed while the ordinary moved keeps nothing at the old address",
			[]*modelsv1.Event{ev(d1), ev(with(a0, func(a *modelsv1.ActualLRP) { a.Presence = evacuating }))},
			actualRemoved(with(a0, func(a *modelsv1.ActualLRP) { a.Presence = evacuating })), none, []brief{reg("a.example.com", 0, 0)}},
		{"a suspect instance serves", []*modelsv1.Event{ev(d1)}, ev(with(a0, func(a *modelsv1.ActualLRP) { a.Presence = suspect })),
			[]brief{reg("a.example.com", 0, 1000)}, none},
		{"a replayed event changes nothing", []*modelsv1.Event{ev(d1), ev(a0)}, ev(a0), none, none},
		{"task events change nothing", []*modelsv1.Event{ev(d1)}, &modelsv1.Event{Payload: &modelsv1.Event_TaskCreated{TaskCreated: &modelsv1.TaskCreatedEvent{}}}, none, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := New()
			for _, e := range c.setup {
				_, err := table.ApplyEvent(e)
				require.NoError(t, err)
			}
			msgs, err := table.ApplyEvent(c.event)
			require.NoError(t, err)
			assert.Equal(t, c.reg, briefs(msgs.Registrations), "registrations")
			assert.Equal(t, c.unrg, briefs(msgs.Unregistrations), "unregistrations")
		})
	}
}

// TestRouteOptionsChangeReRegisters: unlike upstream (#1154) a change of only a route's
// options re-registers with the new options and unregisters nothing.
func TestRouteOptionsChangeReRegisters(t *testing.T) {
	table := New()
	d1 := desiredLRP(t, 1, 1, route(8080, "a.example.com"))
	withOpts := route(8080, "a.example.com")
	withOpts["options"] = map[string]any{"loadbalancing": "least-connection"}
	table.ApplyEvent(ev(d1))
	table.ApplyEvent(ev(actualLRP(0, ordinary, 1)))
	msgs, err := table.ApplyEvent(desiredChanged(d1, desiredLRP(t, 1, 2, withOpts)))
	require.NoError(t, err)
	require.Len(t, msgs.Registrations, 1)
	assert.JSONEq(t, `{"loadbalancing":"least-connection"}`, string(msgs.Registrations[0].Options))
	assert.Empty(t, msgs.Unregistrations)
}

func TestMetricTagsAndFieldsOfARegistration(t *testing.T) {
	table := New()
	d := desiredLRP(t, 1, 1, map[string]any{"hostnames": []any{"a.example.com"}, "port": float64(8080),
		"route_service_url": "https://rs.example.com", "isolation_segment": "iso", "protocol": "http2"})
	d.MetricTags = map[string]*modelsv1.MetricTagValue{
		"source_id": {Static: "app-guid"},
		"index":     {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INDEX},
		"instance":  {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INSTANCE_GUID},
	}
	table.ApplyEvent(ev(d))
	a := actualLRP(0, ordinary, 1)
	a.AvailabilityZone = "z1"
	a.NetInfo.Ports[0].HostTlsProxyPort = 61443
	msgs, _ := table.ApplyEvent(ev(a))
	require.Len(t, msgs.Registrations, 1)
	assert.Equal(t, RegistryMessage{
		Host: "10.0.0.1", Port: 61000, TLSPort: 61443, URIs: []string{"a.example.com"}, App: "app-guid",
		RouteServiceURL: "https://rs.example.com", PrivateInstanceID: "ig-a", PrivateInstanceIndex: "0",
		ServerCertDomainSAN: "ig-a", IsolationSegment: "iso", EndpointUpdatedAtNs: 1000,
		Tags:             map[string]string{"component": "route-emitter", "source_id": "app-guid", "index": "0", "instance": "ig-a"},
		AvailabilityZone: "z1", Protocol: "http2",
	}, msgs.Registrations[0])
}

func TestPreferredInstanceAddressUsesContainerAddressAndPorts(t *testing.T) {
	table := New()
	table.ApplyEvent(ev(desiredLRP(t, 1, 1, route(8080, "a.example.com"))))
	a := actualLRP(0, ordinary, 1)
	a.NetInfo.InstanceAddress = "172.16.0.5"
	a.NetInfo.PreferredAddress = modelsv1.PreferredAddress_PREFERRED_ADDRESS_INSTANCE
	a.NetInfo.Ports[0].ContainerTlsProxyPort = 61001
	msgs, _ := table.ApplyEvent(ev(a))
	require.Len(t, msgs.Registrations, 1)
	m := msgs.Registrations[0]
	assert.Equal(t, []any{"172.16.0.5", uint32(8080), uint32(61001)}, []any{m.Host, m.Port, m.TLSPort})
}

func TestAddressCollisionIsCounted(t *testing.T) {
	table := New()
	table.ApplyEvent(ev(desiredLRP(t, 2, 1, route(8080, "a.example.com"))))
	table.ApplyEvent(ev(actualLRP(0, ordinary, 1)))
	// Index 1 claims index 0's host:port.
	msgs, _ := table.ApplyEvent(ev(with(actualLRP(1, ordinary, 1), func(a *modelsv1.ActualLRP) {
		a.NetInfo = actualLRP(0, ordinary, 1).NetInfo
	})))
	assert.Equal(t, 1, msgs.AddressCollisions)
}

func TestMalformedRoutesAreReported(t *testing.T) {
	table := New()
	d := desiredLRP(t, 1, 1, route(8080, "a.example.com"), map[string]any{"hostnames": []any{"b"}})
	_, err := table.ApplyEvent(ev(d))
	require.ErrorContains(t, err, "routes.cf-router[1].port: is required")
	assert.Len(t, table.Routes(Filter{}), 1, "the good route is kept")
}

func TestSync(t *testing.T) {
	info := func(domain string, idx uint32, hosts ...string) *modelsv1.DesiredLRPRoutingInfo {
		d := desiredLRP(t, 2, idx, route(8080, hosts...))
		return &modelsv1.DesiredLRPRoutingInfo{ProcessGuid: d.ProcessGuid, Domain: domain, LogGuid: d.LogGuid,
			Instances: d.Instances, Routes: d.Routes, ModificationTag: d.ModificationTag}
	}
	a0, a1 := actualLRP(0, ordinary, 1), actualLRP(1, ordinary, 1)
	reg := func(uri string, index int32, updated int64) brief {
		return brief{uri, "10.0.0.1", 61000 + uint32(index), instanceGUID(index), updated}
	}
	none := []brief{}
	cases := []struct {
		name      string
		setup     []*modelsv1.Event
		snapshot  Snapshot
		reg, unrg []brief
	}{
		{"empty table registers everything, new endpoints with since",
			nil, Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info("cf-apps", 1, "a.example.com")},
				Actuals: []*modelsv1.ActualLRP{a0, a1}, FreshDomains: []string{"cf-apps"}},
			[]brief{reg("a.example.com", 0, 1000), reg("a.example.com", 1, 1001)}, none},
		{"unchanged table sends nothing", []*modelsv1.Event{ev(desiredLRP(t, 2, 1, route(8080, "a.example.com"))), ev(a0)},
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info("cf-apps", 1, "a.example.com")},
				Actuals: []*modelsv1.ActualLRP{a0}, FreshDomains: []string{"cf-apps"}}, none, none},
		{"a missed removal unregisters", []*modelsv1.Event{ev(desiredLRP(t, 2, 1, route(8080, "a.example.com"))), ev(a0), ev(a1)},
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info("cf-apps", 1, "a.example.com")},
				Actuals: []*modelsv1.ActualLRP{a0}, FreshDomains: []string{"cf-apps"}}, none, []brief{reg("a.example.com", 1, 0)}},
		{"a vanished desired in a fresh domain unregisters", []*modelsv1.Event{ev(desiredLRP(t, 2, 1, route(8080, "a.example.com"))), ev(a0)},
			Snapshot{Actuals: []*modelsv1.ActualLRP{a0}, FreshDomains: []string{"cf-apps"}}, none, []brief{reg("a.example.com", 0, 0)}},
		{"a vanished desired in a stale domain keeps its routes", []*modelsv1.Event{ev(desiredLRP(t, 2, 1, route(8080, "a.example.com"))), ev(a0)},
			Snapshot{Actuals: []*modelsv1.ActualLRP{a0}}, none, none},
		{"a dropped hostname in a stale domain is kept, an added one registers",
			[]*modelsv1.Event{ev(desiredLRP(t, 2, 1, route(8080, "a.example.com"))), ev(a0)},
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info("cf-apps", 2, "b.example.com")}, Actuals: []*modelsv1.ActualLRP{a0}},
			[]brief{reg("b.example.com", 0, 0)}, none},
		{"events during the sync are replayed onto the fresh table", nil,
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info("cf-apps", 1, "a.example.com")},
				Actuals: []*modelsv1.ActualLRP{a0, a1}, FreshDomains: []string{"cf-apps"}, Events: []*modelsv1.Event{actualRemoved(a1)}},
			[]brief{reg("a.example.com", 0, 1000)}, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := New()
			for _, e := range c.setup {
				table.ApplyEvent(e)
			}
			msgs, err := table.Sync(c.snapshot)
			require.NoError(t, err)
			assert.Equal(t, len(table.Registrations()), table.RouteCount(), "route count after the sync")
			assert.Equal(t, c.reg, briefs(msgs.Registrations), "registrations")
			assert.Equal(t, c.unrg, briefs(msgs.Unregistrations), "unregistrations")
			again, err := table.Sync(c.snapshot)
			require.NoError(t, err)
			assert.True(t, again.Empty() || len(c.snapshot.FreshDomains) == 0, "a second identical sync sends nothing: %+v", again)
		})
	}
}

// TestEventsOlderThanASnapshotConverge: a watcher's stream starts before its sync reads,
// so events the snapshot already reflects reach the table too, replayed onto the fresh
// table (during the sync) or applied after it (a lagging stream). In commit order they
// converge to the state after the last event; those whose modification tags the
// snapshot's succeed change nothing at all.
func TestEventsOlderThanASnapshotConverge(t *testing.T) {
	d1 := desiredLRP(t, 2, 1, route(8080, "a.example.com"))
	d2 := desiredLRP(t, 2, 2, route(8080, "b.example.com"))
	info := func(d *modelsv1.DesiredLRP) *modelsv1.DesiredLRPRoutingInfo {
		return &modelsv1.DesiredLRPRoutingInfo{ProcessGuid: d.ProcessGuid, Domain: d.Domain, LogGuid: d.LogGuid,
			Instances: d.Instances, Routes: d.Routes, ModificationTag: d.ModificationTag}
	}
	a0 := actualLRP(0, ordinary, 1)
	moved := with(a0, func(a *modelsv1.ActualLRP) {
		a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: 2}
		a.NetInfo = &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 62000}}}
	})
	recreated := with(a0, func(a *modelsv1.ActualLRP) {
		a.InstanceGuid = "ig-new"
		a.ModificationTag = &modelsv1.ModificationTag{Epoch: "b", Index: 1}
		a.NetInfo = &modelsv1.ActualLRPNetInfo{Address: "10.0.0.2", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 63000}}}
	})
	at := func(uri, host string, port uint32, instance string) brief { return brief{uri, host, port, instance, 0} }
	cases := []struct {
		name     string
		snapshot Snapshot
		events   []*modelsv1.Event
		want     []brief
		// quiet: applied after the sync, the events send nothing.
		quiet bool
	}{
		{"an instance that moved",
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info(d1)}, Actuals: []*modelsv1.ActualLRP{moved}},
			[]*modelsv1.Event{ev(a0), actualChanged(a0, moved)},
			[]brief{at("a.example.com", "10.0.0.1", 62000, "ig-a")}, true},
		{"a desired LRP whose routes changed",
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info(d2)}, Actuals: []*modelsv1.ActualLRP{a0}},
			[]*modelsv1.Event{ev(d1), desiredChanged(d1, d2)},
			[]brief{at("b.example.com", "10.0.0.1", 61000, "ig-a")}, true},
		{"an instance removed and its row created again",
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info(d1)}, Actuals: []*modelsv1.ActualLRP{recreated}},
			[]*modelsv1.Event{ev(a0), actualRemoved(a0), ev(recreated)},
			[]brief{at("a.example.com", "10.0.0.2", 63000, "ig-new")}, false},
		{"an instance removed",
			Snapshot{Desired: []*modelsv1.DesiredLRPRoutingInfo{info(d1)}},
			[]*modelsv1.Event{ev(a0), actualRemoved(a0)},
			[]brief{}, false},
	}
	for _, c := range cases {
		t.Run(c.name+", replayed during the sync", func(t *testing.T) {
			table := New()
			s := c.snapshot
			s.Events = c.events
			_, err := table.Sync(s)
			require.NoError(t, err)
			assert.Equal(t, c.want, briefs(table.Registrations()))
		})
		t.Run(c.name+", applied after the sync", func(t *testing.T) {
			table := New()
			_, err := table.Sync(c.snapshot)
			require.NoError(t, err)
			var sent Messages
			for _, e := range c.events {
				msgs, err := table.ApplyEvent(e)
				require.NoError(t, err)
				sent.merge(msgs)
			}
			assert.Equal(t, c.want, briefs(table.Registrations()))
			if c.quiet {
				assert.True(t, sent.Empty(), "nothing sent: %+v", sent)
			}
		})
	}
}

func TestSaveAndLoadRoundTrip(t *testing.T) {
	table := New()
	table.ApplyEvent(ev(desiredLRP(t, 2, 1, route(8080, "a.example.com", "b.example.com"))))
	table.ApplyEvent(ev(actualLRP(0, ordinary, 1)))
	table.ApplyEvent(ev(actualLRP(1, evacuating, 1)))
	data, err := json.Marshal(table)
	require.NoError(t, err)

	loaded := New()
	require.NoError(t, json.Unmarshal(data, loaded))
	assert.Equal(t, table.Registrations(), loaded.Registrations())
	assert.Equal(t, table.Routes(Filter{}), loaded.Routes(Filter{}))
	msgs, _ := loaded.ApplyEvent(actualRemoved(actualLRP(0, ordinary, 1)))
	assert.Len(t, msgs.Unregistrations, 2, "the loaded table knows what it registered")
}

func TestRoutesViewIsFilteredAndSorted(t *testing.T) {
	table := New()
	table.ApplyEvent(ev(desiredLRP(t, 2, 1, route(8080, "b.example.com", "a.example.com"))))
	table.ApplyEvent(ev(actualLRP(1, ordinary, 1)))
	table.ApplyEvent(ev(actualLRP(0, ordinary, 1)))
	routes := table.Routes(Filter{})
	require.Len(t, routes, 2)
	assert.Equal(t, "a.example.com", routes[0].Hostname)
	require.Len(t, routes[0].Endpoints, 2)
	assert.Equal(t, int32(0), routes[0].Endpoints[0].Index)
	assert.Len(t, table.Routes(Filter{Hostname: "b.example.com"}), 1)
	assert.Empty(t, table.Routes(Filter{ProcessGUID: "other"}))
	assert.Equal(t, 4, table.RouteCount())
}

// TestAnEventReplacesRoutesASyncKept: after a restart the table can lag the BBS, and the
// event that changed a route may arrive after the sync; for a stale domain the sync
// keeps the old hostname, and the event (same version as the snapshot) must still
// replace it and unregister the old hostname.
func TestAnEventReplacesRoutesASyncKept(t *testing.T) {
	table := New()
	a0 := actualLRP(0, ordinary, 1)
	table.ApplyEvent(ev(desiredLRP(t, 1, 1, route(8080, "old.example.com"))))
	table.ApplyEvent(ev(a0))
	moved := desiredLRP(t, 1, 2, route(8080, "new.example.com"))
	msgs, err := table.Sync(Snapshot{Actuals: []*modelsv1.ActualLRP{a0}, Desired: []*modelsv1.DesiredLRPRoutingInfo{{
		ProcessGuid: moved.ProcessGuid, Domain: moved.Domain, LogGuid: moved.LogGuid, Instances: moved.Instances,
		Routes: moved.Routes, ModificationTag: moved.ModificationTag}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"new.example.com"}, uris(msgs.Registrations))
	assert.Empty(t, msgs.Unregistrations, "a stale domain keeps the old hostname")

	msgs, err = table.ApplyEvent(ev(moved))
	require.NoError(t, err)
	assert.Empty(t, msgs.Registrations)
	assert.Equal(t, []string{"old.example.com"}, uris(msgs.Unregistrations), "the event's version drops the kept hostname")

	msgs, err = table.ApplyEvent(ev(moved))
	require.NoError(t, err)
	assert.True(t, msgs.Empty(), "the same version again changes nothing")
}

func uris(ms []RegistryMessage) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.URIs...)
	}
	return out
}

func TestCloneIsUnaffectedByLaterChanges(t *testing.T) {
	table := New()
	table.ApplyEvent(ev(desiredLRP(t, 3, 1, route(8080, "a.example.com"))))
	table.ApplyEvent(ev(actualLRP(0, ordinary, 1)))
	table.ApplyEvent(ev(actualLRP(1, ordinary, 1)))
	clone := table.Clone()
	before, err := json.Marshal(clone)
	require.NoError(t, err)
	want := briefs(clone.Registrations())

	// Every kind of change to the original: a row added, changed, removed, the routes
	// changed, the desired LRP removed.
	table.ApplyEvent(ev(actualLRP(2, ordinary, 1)))
	table.ApplyEvent(actualRemoved(actualLRP(0, ordinary, 1)))
	table.ApplyEvent(ev(desiredLRP(t, 3, 2, route(8080, "b.example.com"))))
	table.RemoveDesired("web")

	after, err := json.Marshal(clone)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "the clone's content")
	assert.Equal(t, want, briefs(clone.Registrations()))
	assert.Equal(t, 2, clone.RouteCount())
	assert.Zero(t, table.RouteCount())
}

func TestRouteCountFollowsEveryChange(t *testing.T) {
	table := New()
	for i, e := range []*modelsv1.Event{
		ev(actualLRP(0, ordinary, 1)),
		ev(desiredLRP(t, 2, 1, route(8080, "a.example.com", "b.example.com"))),
		ev(actualLRP(1, ordinary, 1)),
		ev(actualLRP(1, evacuating, 1)),
		ev(desiredLRP(t, 1, 2, route(8080, "a.example.com"))),
		actualRemoved(actualLRP(0, ordinary, 1)),
	} {
		table.ApplyEvent(e)
		assert.Equal(t, len(table.Registrations()), table.RouteCount(), "after event %d", i)
	}
}
