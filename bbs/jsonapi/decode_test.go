package jsonapi_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return data
}

func TestDecodeDesiredLRPSeed(t *testing.T) {
	lrp, err := jsonapi.DecodeDesiredLRP(readFixture(t, "desired_lrp_seed.json"))
	require.NoError(t, err)

	require.Equal(t, "some-guid", lrp.GetProcessGuid())
	require.Equal(t, "some-domain", lrp.GetDomain())
	require.EqualValues(t, 17, lrp.GetInstances())
	require.Equal(t, "VALID-ROOTFS", lrp.GetRootfs())
	require.Len(t, lrp.GetEnv(), 2)
	require.Equal(t, "ENV_NAME_B", lrp.GetEnv()[1].GetName())
	require.Equal(t, "ENV_VALUE_B", lrp.GetEnv()[1].GetValue())
	require.EqualValues(t, 57, lrp.GetCpuWeight())
	require.EqualValues(t, 1024, lrp.GetDiskMb())
	require.EqualValues(t, 128, lrp.GetMemoryMb())
	require.True(t, lrp.GetPrivileged())
	require.Equal(t, "/app", lrp.GetSetup().GetDownload().GetTo())
	require.Equal(t, "/bin/sh", lrp.GetAction().GetRun().GetPath())
	require.Equal(t, []string{"-c", "while true; do sleep 1; done"}, lrp.GetAction().GetRun().GetArgs())
	require.Equal(t, "root", lrp.GetAction().GetRun().GetUser())
	require.Equal(t, "/bin/true", lrp.GetMonitor().GetRun().GetPath())
	require.EqualValues(t, 60, lrp.GetStartTimeout())
	require.Equal(t, []uint32{8080, 5050}, lrp.GetPorts())
	require.Len(t, lrp.GetRoutes(), 2)
	require.Equal(t, "any opaque json payload", lrp.GetRoutes()["identifier-for-your-own-router-type"].GetStringValue())
	require.Len(t, lrp.GetRoutes()["cf-router"].GetListValue().GetValues(), 2)
	require.Equal(t, "some-log-guid", lrp.GetLogGuid())
	require.Equal(t, "some-log-source", lrp.GetLogSource())
	require.Equal(t, "some-metrics-guid", lrp.GetMetricsGuid())
	require.Equal(t, "arbitrary metadata", lrp.GetAnnotation())
	require.Len(t, lrp.GetEgressRules(), 1)
	rule := lrp.GetEgressRules()[0]
	require.Equal(t, "tcp", rule.GetProtocol())
	require.Equal(t, []string{"0.0.0.0/0"}, rule.GetDestinations())
	require.EqualValues(t, 1, rule.GetPortRange().GetStart())
	require.EqualValues(t, 1024, rule.GetPortRange().GetEnd())
}

func TestEncodeDesiredLRPKeepsEverySeedField(t *testing.T) {
	seed := readFixture(t, "desired_lrp_seed.json")
	lrp, err := jsonapi.DecodeDesiredLRP(seed)
	require.NoError(t, err)

	encoded, err := jsonapi.EncodeDesiredLRP(lrp)
	require.NoError(t, err)

	var want, got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(seed, &want))
	require.NoError(t, json.Unmarshal(encoded, &got))
	require.ElementsMatch(t, keys(want), keys(got), "encoded fields")
	for field, raw := range want {
		t.Run(field, func(t *testing.T) {
			require.JSONEq(t, string(raw), string(got[field]))
		})
	}

	// Routes are opaque: they come back as the same JSON, byte for byte once canonical.
	require.Equal(t, canonicalJSON(t, want["routes"]), canonicalJSON(t, got["routes"]))
}

func TestEncodeDesiredLRPAlwaysHasInstances(t *testing.T) {
	for name, lrp := range map[string]*modelsv1.DesiredLRP{
		"zero instances": {ProcessGuid: "p", Domain: "d"},
		"nil":            nil,
	} {
		t.Run(name, func(t *testing.T) {
			encoded, err := jsonapi.EncodeDesiredLRP(lrp)
			require.NoError(t, err)
			var got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(encoded, &got))
			require.JSONEq(t, "0", string(got["instances"]))
		})
	}
}

func TestDecodeRejectsBadJSON(t *testing.T) {
	tests := []struct {
		name    string
		decode  func([]byte) error
		body    string
		mention string
	}{
		{"unknown top-level field", decodeLRP, `{"process_guid": "p", "bogus_field": 1}`, "bogus_field"},
		{"unknown action field", decodeLRP, `{"action": {"run": {"path": "/bin/sh", "pathz": "x"}}}`, "pathz"},
		{"unknown action kind", decodeLRP, `{"action": {"launch": {}}}`, "launch"},
		{"wrong type", decodeLRP, `{"instances": "many"}`, "instances"},
		{"malformed", decodeLRP, `{"process_guid": "p",}`, "invalid desired LRP JSON"},
		{"seed without the comma after routes", decodeLRP, `{"routes": {"a": 1} "log_guid": "x"}`, "invalid desired LRP JSON"},
		{"empty body", decodeLRP, ``, "empty body"},
		{"whitespace body", decodeLRP, " \n ", "empty body"},
		{"array instead of object", decodeLRP, `[]`, "invalid desired LRP JSON"},
		{"update unknown field", decodeUpdate, `{"instances": 2, "rootfs": "x"}`, "rootfs"},
		{"update negative as string", decodeUpdate, `{"instances": "two"}`, "instances"},
		{"task unknown field", decodeTask, `{"task_guid": "t", "task_defintion": {}}`, "task_defintion"},
		{"task unknown definition field", decodeTask, `{"task_guid": "t", "task_definition": {"cmd": "x"}}`, "cmd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode([]byte(tt.body))
			require.Error(t, err)
			require.True(t, errors.Is(err, &models.Error{Type: models.ErrTypeInvalidJSON}), "error type of %v", err)
			require.Contains(t, err.Error(), tt.mention)
		})
	}
}

func TestDecodeDesiredLRPUpdate(t *testing.T) {
	update, err := jsonapi.DecodeDesiredLRPUpdate(readFixture(t, "desired_lrp_update_seed.json"))
	require.NoError(t, err)
	require.NotNil(t, update.Instances)
	require.EqualValues(t, 17, update.GetInstances())
	require.NotNil(t, update.Annotation)
	require.Equal(t, "arbitrary metadata", update.GetAnnotation())
	require.Equal(t, "any opaque json payload", update.GetRoutes()["some-other-router"].GetStringValue())
	require.Len(t, update.GetRoutes()["cf-router"].GetListValue().GetValues(), 2)

	tests := []struct {
		name          string
		body          string
		hasInstances  bool
		instances     int32
		hasAnnotation bool
		routes        int
	}{
		{"instances only", `{"instances": 3}`, true, 3, false, 0},
		{"scale to zero is explicit", `{"instances": 0}`, true, 0, false, 0},
		{"annotation only", `{"annotation": ""}`, false, 0, true, 0},
		{"routes only", `{"routes": {"r": {"k": [1, 2]}}}`, false, 0, false, 1},
		{"empty update", `{}`, false, 0, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := jsonapi.DecodeDesiredLRPUpdate([]byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.hasInstances, u.Instances != nil)
			require.Equal(t, tt.instances, u.GetInstances())
			require.Equal(t, tt.hasAnnotation, u.Annotation != nil)
			require.Len(t, u.GetRoutes(), tt.routes)
		})
	}
}

func TestDecodeDesireTask(t *testing.T) {
	req, err := jsonapi.DecodeDesireTask([]byte(`{
		"task_guid": "task-1",
		"domain": "tasks",
		"task_definition": {
			"rootfs": "preloaded:cflinuxfs4",
			"action": {"run": {"path": "/bin/echo", "args": ["hi"], "user": "root"}},
			"memory_mb": 64,
			"result_file": "/tmp/result",
			"completion_callback_url": "http://cc/done"
		}
	}`))
	require.NoError(t, err)
	require.Equal(t, "task-1", req.GetTaskGuid())
	require.Equal(t, "tasks", req.GetDomain())
	def := req.GetTaskDefinition()
	require.Equal(t, "preloaded:cflinuxfs4", def.GetRootfs())
	require.Equal(t, []string{"hi"}, def.GetAction().GetRun().GetArgs())
	require.EqualValues(t, 64, def.GetMemoryMb())
	require.Equal(t, "/tmp/result", def.GetResultFile())
	require.Equal(t, "http://cc/done", def.GetCompletionCallbackUrl())
}

func readFixtureF(f *testing.F, name string) []byte {
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	return data
}

func decodeLRP(b []byte) error    { _, err := jsonapi.DecodeDesiredLRP(b); return err }
func decodeUpdate(b []byte) error { _, err := jsonapi.DecodeDesiredLRPUpdate(b); return err }
func decodeTask(b []byte) error   { _, err := jsonapi.DecodeDesireTask(b); return err }

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func canonicalJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

func TestDecodeRefusesNumbersGivenAsStrings(t *testing.T) {
	tests := []struct {
		name   string
		decode func([]byte) error
		body   string
		fields []string
	}{
		{"instances", decodeLRP, `{"process_guid": "p", "instances": "3"}`, []string{"instances"}},
		{"every quoted number is named", decodeLRP, `{"memory_mb": "128", "ports": [8080, "5050"],
			"action": {"timeout": {"timeout_ms": "1000", "action": {"run": {"path": "/x", "resource_limits": {"nofile": "1024"}}}}},
			"egress_rules": [{"protocol": "tcp", "port_range": {"start": "1", "end": 2}}],
			"check_definition": {"checks": [{"http_check": {"port": 8080, "interval_ms": "5"}}]},
			"log_rate_limit": {"bytes_per_second": "-1"}, "created_at": "1"}`, []string{
			"memory_mb", "ports[1]", "action.timeout.timeout_ms", "action.timeout.action.run.resource_limits.nofile",
			"egress_rules[0].port_range.start", "check_definition.checks[0].http_check.interval_ms",
			"log_rate_limit.bytes_per_second", "created_at",
		}},
		{"lowerCamel names too", decodeLRP, `{"memoryMb": "128", "startTimeout": "60"}`, []string{"memory_mb", "start_timeout"}},
		{"update instances", decodeUpdate, `{"instances": "3"}`, []string{"instances"}},
		{"task definition", decodeTask, `{"task_guid": "t", "task_definition": {"memory_mb": "64", "max_pids": "1"}}`,
			[]string{"task_definition.memory_mb", "task_definition.max_pids"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode([]byte(tt.body))
			require.ErrorIs(t, err, &models.Error{Type: models.ErrTypeInvalidJSON})
			for _, f := range tt.fields {
				require.Contains(t, err.Error(), "invalid field "+f+": must be a JSON number, not a string")
			}
			require.Equal(t, len(tt.fields), strings.Count(err.Error(), "must be a JSON number"), err.Error())
		})
	}

	t.Run("what the seed documents is still accepted", func(t *testing.T) {
		_, err := jsonapi.DecodeDesiredLRP(readFixture(t, "desired_lrp_seed.json"))
		require.NoError(t, err)
		_, err = jsonapi.DecodeDesireTask(readFixture(t, "desire_task.json"))
		require.NoError(t, err)
		_, err = jsonapi.DecodeDesiredLRPUpdate(readFixture(t, "desired_lrp_update_seed.json"))
		require.NoError(t, err)
	})

	t.Run("strings stay strings, enums may be names or numbers, routes are opaque", func(t *testing.T) {
		lrp, err := jsonapi.DecodeDesiredLRP([]byte(`{"process_guid": "123", "annotation": "4",
			"update_strategy": "UPDATE_STRATEGY_RECREATE", "metric_tags": {"i": {"dynamic": 1}},
			"routes": {"r": {"port": "8080"}}}`))
		require.NoError(t, err)
		require.Equal(t, "123", lrp.GetProcessGuid())
		require.Equal(t, modelsv1.MetricTagValue_DYNAMIC_INDEX, lrp.GetMetricTags()["i"].GetDynamic())
		require.Equal(t, "8080", lrp.GetRoutes()["r"].GetStructValue().GetFields()["port"].GetStringValue())
	})
}

func TestDecodeRefusesDeepNestingBeforeDecoding(t *testing.T) {
	deep := func(levels int) string {
		return `{"routes": {"r": ` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}}`
	}
	// The body object and the routes object are two levels.
	_, err := jsonapi.DecodeDesiredLRP([]byte(deep(models.MaxJSONDepth - 2)))
	require.NoError(t, err, "at the limit")

	_, err = jsonapi.DecodeDesiredLRP([]byte(deep(models.MaxJSONDepth - 1)))
	require.ErrorIs(t, err, &models.Error{Type: models.ErrTypeInvalidJSON})
	require.Contains(t, err.Error(), "arrays and objects must nest at most 100 levels deep")

	// The 4,998-deep serial tree is refused by the decoder, cheaply.
	tree := `{"action": ` + strings.Repeat(`{"serial": {"actions": [`, 4998) + `{"run": {}}` + strings.Repeat(`]}}`, 4998) + `}`
	_, err = jsonapi.DecodeDesiredLRP([]byte(tree))
	require.ErrorIs(t, err, &models.Error{Type: models.ErrTypeInvalidJSON})
	require.Contains(t, err.Error(), "at most 100 levels deep")

	// Brackets in strings do not count.
	lrp, err := jsonapi.DecodeDesiredLRP([]byte(`{"annotation": "` + strings.Repeat(`[{\"`, 500) + `"}`))
	require.NoError(t, err)
	require.Len(t, lrp.GetAnnotation(), 1500)
}

func TestEncodeWritesIntegersAsNumbers(t *testing.T) {
	lrp := &modelsv1.DesiredLRP{
		ProcessGuid: "p", CreatedAt: 1795315210062074322,
		Action: &modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{
			TimeoutMs: 30000, Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
				Path: "/x", ResourceLimits: &modelsv1.ResourceLimits{Nofile: 18446744073709551615},
			}}},
		}}},
		LogRateLimit: &modelsv1.LogRateLimit{BytesPerSecond: -1},
		Annotation:   "<a & b>",
	}
	encoded, err := jsonapi.EncodeDesiredLRP(lrp)
	require.NoError(t, err)
	for _, want := range []string{
		`"created_at":1795315210062074322`, `"timeout_ms":30000`, `"nofile":18446744073709551615`,
		`"bytes_per_second":-1`, `"annotation":"<a & b>"`,
	} {
		require.Contains(t, string(encoded), want)
	}
	again, err := jsonapi.DecodeDesiredLRP(encoded)
	require.NoError(t, err)
	require.True(t, proto.Equal(lrp, again))

	view, err := jsonapi.TaskView(&modelsv1.Task{TaskDefinition: &modelsv1.TaskDefinition{LogRateLimit: &modelsv1.LogRateLimit{BytesPerSecond: 99}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"log_rate_limit": {"bytes_per_second": 99}}`, string(view.TaskDefinition))
}

func TestDecodeCordonReason(t *testing.T) {
	for body, want := range map[string]string{``: "", " \n": "", `{}`: "", `{"reason": "kernel upgrade"}`: "kernel upgrade"} {
		reason, err := jsonapi.DecodeCordonReason([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, want, reason)
	}
	for _, body := range []string{`{"reason": 3}`, `{"why": "x"}`, `not json`, `{"reason": "a"} {"reason": "b"}`, `[]`} {
		_, err := jsonapi.DecodeCordonReason([]byte(body))
		require.ErrorIs(t, err, &models.Error{Type: models.ErrTypeInvalidJSON}, body)
	}
}
