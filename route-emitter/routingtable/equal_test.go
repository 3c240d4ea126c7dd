package routingtable

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// changeField sets field i of the struct v points to to a different value.
func changeField(t *testing.T, v reflect.Value, i int) {
	t.Helper()
	f := v.Elem().Field(i)
	switch f.Kind() {
	case reflect.String:
		f.SetString(f.String() + "x")
	case reflect.Bool:
		f.SetBool(!f.Bool())
	case reflect.Int32, reflect.Int64:
		f.SetInt(f.Int() + 1)
	case reflect.Uint32:
		f.SetUint(f.Uint() + 1)
	case reflect.Struct: // Tag
		f.Field(1).SetUint(f.Field(1).Uint() + 1)
	case reflect.Slice, reflect.Map:
		f.Set(reflect.Zero(f.Type())) // the fixtures fill every slice and map
	default:
		t.Fatalf("field %s: kind %s not covered", v.Elem().Type().Field(i).Name, f.Kind())
	}
}

// TestEqualComparesEveryField guards the hand-written equality a sync skips unchanged
// processes by: changing any field of Desired, Route or Actual makes it unequal.
func TestEqualComparesEveryField(t *testing.T) {
	desired := func() *Desired {
		return &Desired{ProcessGUID: "p", Domain: "d", LogGUID: "l", Instances: 2, Tag: Tag{"e", 1}, KeptRoutes: false,
			MetricTags: map[string]MetricTag{"k": {Static: "v"}},
			Routes: []Route{{Hostnames: []string{"a"}, Port: 8080, RouteServiceURL: "https://rs", IsolationSegment: "i",
				Protocol: "http2", Options: json.RawMessage(`{"x":1}`)}}}
	}
	actual := func() *Actual {
		return &Actual{ProcessGUID: "p", Index: 1, Presence: ordinary, InstanceGUID: "g", CellID: "c", State: running,
			Routable: true, Address: "10.0.0.1", InstanceAddress: "10.1.0.1", PreferInstance: false,
			Ports: []*PortMapping{{ContainerPort: 8080, HostPort: 61000}}, Since: 5, AvailabilityZone: "z", Tag: Tag{"a", 1}}
	}
	assert.True(t, desired().equal(desired()))
	assert.True(t, actual().equal(actual()))
	assert.False(t, desired().equal(nil))
	assert.True(t, (*Actual)(nil).equal(nil))
	for i := range reflect.TypeFor[Desired]().NumField() {
		d := desired()
		changeField(t, reflect.ValueOf(d), i)
		assert.False(t, desired().equal(d), "Desired.%s", reflect.TypeFor[Desired]().Field(i).Name)
	}
	for i := range reflect.TypeFor[Route]().NumField() {
		d := desired()
		changeField(t, reflect.ValueOf(&d.Routes[0]), i)
		assert.False(t, desired().equal(d), "Route.%s", reflect.TypeFor[Route]().Field(i).Name)
	}
	for i := range reflect.TypeFor[Actual]().NumField() {
		a := actual()
		changeField(t, reflect.ValueOf(a), i)
		assert.False(t, actual().equal(a), "Actual.%s", reflect.TypeFor[Actual]().Field(i).Name)
	}
	a := actual()
	a.Ports[0] = nil
	assert.False(t, actual().equal(a), "a nil port mapping (a hand-edited state file) does not panic")
	b := actual()
	b.Ports = []*PortMapping{{ContainerPort: 8080, HostPort: 61001}}
	assert.False(t, actual().equal(b), "a port mapping's values")
}
