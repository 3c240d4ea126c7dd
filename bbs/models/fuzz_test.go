package models_test

import (
	"errors"
	"testing"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// FuzzValidateDesiredLRP decodes arbitrary JSON the way the HTTP API does and runs
// validation, defaulting and the views on it: none may panic, failures must be
// InvalidRequest errors, and the views must round-trip.
func FuzzValidateDesiredLRP(f *testing.F) {
	f.Add([]byte(seedDesiredLRPJSON))
	full, err := protojson.Marshal(fullDesiredLRP(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	for _, s := range []string{
		`{}`,
		`{"process_guid": "x", "action": {"serial": {"actions": [{}, {"timeout": {}}]}}}`,
		`{"action": {"codependent": {"actions": [{"try": {"action": {"emit_progress": {}}}}]}}}`,
		`{"egress_rules": [{"protocol": "tcp", "destinations": ["1.2.3.4-1.2.3.3", "::/129"], "port_range": {"start": 9, "end": 1}}]}`,
		`{"metric_tags": {"source_id": {"static": "a", "dynamic": "DYNAMIC_INDEX"}}, "metrics_guid": "b"}`,
		`{"routes": {"cf-router": [{"port": 1e308}], "x": null}, "check_definition": {"checks": [{}]}}`,
		`{"image_layers": [{"layer_type": "LAYER_TYPE_EXCLUSIVE"}], "volume_mounts": [{"shared": {}, "dedicated": {}}]}`,
		`{"sidecars": [{}], "cached_dependencies": [{}], "log_rate_limit": {"bytes_per_second": "-9"}}`,
		`{"rootfs": "docker://u:p@h:5000/a/b:c@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef#t"}`,
		`{"rootfs": "docker:///a#b", "image_username": "u", "image_password": "p"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lrp := &modelsv1.DesiredLRP{}
		if protojson.Unmarshal(data, lrp) != nil {
			return
		}
		checkValidationError(t, models.ValidateDesiredLRP(lrp))
		checkValidationError(t, models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}))
		checkValidationError(t, models.ValidateTaskDefinition(&modelsv1.TaskDefinition{
			Rootfs: lrp.GetRootfs(), Action: lrp.GetAction(), EgressRules: lrp.GetEgressRules(),
			ImageLayers: lrp.GetImageLayers(), CachedDependencies: lrp.GetCachedDependencies(),
		}))

		joined := models.DesiredLRPFromViews(models.SchedulingInfo(lrp), models.RunInfo(lrp))
		if !proto.Equal(lrp, joined) {
			t.Fatalf("views do not round-trip:\n%v\n%v", lrp, joined)
		}
		_ = models.RoutingInfo(lrp)
		_ = models.LRPStartRequest(models.SchedulingInfo(lrp), []int32{0})
		if e := models.DesiredLRPCreatedEvent(lrp).GetDesiredLrpCreated().GetDesiredLrp(); e.GetImagePassword() != "" || e.GetImageUsername() != "" {
			t.Fatalf("an event carries image credentials")
		}

		updated := models.ApplyDesiredLRPUpdate(lrp, &modelsv1.DesiredLRPUpdate{MetricTags: lrp.GetMetricTags(), ClearRoutes: true})
		if updated.GetModificationTag().GetIndex() != lrp.GetModificationTag().GetIndex()+1 {
			t.Fatalf("update did not bump the modification index")
		}
		models.PrepareDesiredLRP(lrp)
		prepared := proto.CloneOf(lrp)
		models.PrepareDesiredLRP(lrp)
		if !proto.Equal(prepared, lrp) {
			t.Fatalf("PrepareDesiredLRP is not idempotent")
		}
		checkValidationError(t, models.ValidateDesiredLRP(lrp))
	})
}

// checkValidationError fails unless err is nil or an InvalidRequest *models.Error.
func checkValidationError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var me *models.Error
	if !errors.As(err, &me) || me.Type != models.ErrTypeInvalidRequest || me.Message == "" {
		t.Fatalf("unexpected validation error %#v", err)
	}
}
