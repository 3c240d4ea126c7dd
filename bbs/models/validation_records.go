package models

import (
	"errors"
	"net/url"
	"strings"

	"drover.dev/lib/dockerref"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// sourceIDTag is the metric tag that names the loggregator source of an LRP.
const sourceIDTag = "source_id"

// ValidateDesiredLRP checks a DesiredLRP against every rule of reference/bbs.md §2.6
// and the LRP API. Field paths are relative to the DesiredLRP (e.g. "process_guid",
// "setup.serial.actions[1].run.user"). It returns nil or an InvalidRequest *Error
// listing every violation.
func ValidateDesiredLRP(lrp *modelsv1.DesiredLRP) error {
	var v violations
	v.desiredLRP("", lrp)
	return v.err()
}

// ValidateDesiredLRPUpdate checks a DesiredLRPUpdate; field paths are relative to it.
func ValidateDesiredLRPUpdate(u *modelsv1.DesiredLRPUpdate) error {
	var v violations
	v.desiredLRPUpdate("", u)
	return v.err()
}

// ValidateTaskDefinition checks a TaskDefinition; field paths are relative to it.
func ValidateTaskDefinition(def *modelsv1.TaskDefinition) error {
	var v violations
	v.taskDefinition("", def)
	return v.err()
}

// ValidateCellPresence checks a CellPresence as reference/bbs.md §2.5 describes.
func ValidateCellPresence(p *modelsv1.CellPresence) error {
	var v violations
	v.cellPresence("", p)
	return v.err()
}

// PrepareDesiredLRP applies the defaults a new DesiredLRP gets before validation:
// a "source_id" metric tag equal to metrics_guid when metrics_guid is set and the
// tag is missing, and the ROLLING update strategy when none is given. log_guid
// stays as given. It is idempotent and does nothing to nil.
func PrepareDesiredLRP(lrp *modelsv1.DesiredLRP) {
	if lrp == nil {
		return
	}
	lrp.MetricTags = withSourceIDTag(lrp.GetMetricTags(), lrp.GetMetricsGuid())
	if lrp.GetUpdateStrategy() == modelsv1.UpdateStrategy_UPDATE_STRATEGY_UNSPECIFIED {
		lrp.UpdateStrategy = modelsv1.UpdateStrategy_UPDATE_STRATEGY_ROLLING
	}
}

// withSourceIDTag returns tags with a static source_id = metricsGUID added when
// metricsGUID is set and tags has no source_id yet.
func withSourceIDTag(tags map[string]*modelsv1.MetricTagValue, metricsGUID string) map[string]*modelsv1.MetricTagValue {
	if metricsGUID == "" {
		return tags
	}
	if _, ok := tags[sourceIDTag]; ok {
		return tags
	}
	if tags == nil {
		tags = make(map[string]*modelsv1.MetricTagValue, 1)
	}
	tags[sourceIDTag] = &modelsv1.MetricTagValue{Static: metricsGUID}
	return tags
}

// desiredLRP validates a DesiredLRP found at path p ("" for the top level).
func (v *violations) desiredLRP(p string, lrp *modelsv1.DesiredLRP) {
	if lrp == nil {
		v.add(orName(p, "desired_lrp"), ruleRequired)
		return
	}
	v.guid(field(p, "process_guid"), lrp.GetProcessGuid())
	v.requiredIdentifier(field(p, "domain"), lrp.GetDomain())
	v.instances(field(p, "instances"), lrp.GetInstances())
	v.containerSpec(p, specOfDesiredLRP(lrp))
	v.routes(field(p, "routes"), lrp.GetRoutes())
	v.metricsGUIDMatchesSourceID(p, lrp.GetMetricTags(), lrp.GetMetricsGuid())
	v.optionalAction(field(p, "setup"), lrp.GetSetup())
	v.optionalAction(field(p, "monitor"), lrp.GetMonitor())
	v.checkDefinition(field(p, "check_definition"), lrp.GetCheckDefinition())
	v.sidecars(field(p, "sidecars"), lrp.GetSidecars())
	v.ports(field(p, "ports"), lrp.GetPorts())
}

// instances checks a desired number of instances: 0 to MaxInstances.
func (v *violations) instances(path string, n int32) {
	v.nonNegative(path, int64(n))
	if n > MaxInstances {
		v.addf(path, "must be at most %d", MaxInstances)
	}
}

// desiredLRPUpdate validates a DesiredLRPUpdate found at path p.
func (v *violations) desiredLRPUpdate(p string, u *modelsv1.DesiredLRPUpdate) {
	if u == nil {
		v.add(orName(p, "update"), ruleRequired)
		return
	}
	if u.Instances != nil {
		v.instances(field(p, "instances"), u.GetInstances())
	}
	v.annotation(field(p, "annotation"), u.GetAnnotation())
	v.routes(field(p, "routes"), u.GetRoutes())
	if u.GetClearRoutes() && len(u.GetRoutes()) > 0 {
		v.add(field(p, "clear_routes"), "must not be set together with routes")
	}
	v.metricTags(field(p, "metric_tags"), u.GetMetricTags())
	if (u.ImageUsername != nil) != (u.ImagePassword != nil) {
		v.together(p, "image_username", presence(u.ImageUsername), "image_password", presence(u.ImagePassword))
	} else {
		v.together(p, "image_username", u.GetImageUsername(), "image_password", u.GetImagePassword())
	}
}

// presence turns an optional string into "set" or "" so that together can compare presence.
func presence(s *string) string {
	if s == nil {
		return ""
	}
	return "set"
}

// taskDefinition validates a TaskDefinition found at path p.
func (v *violations) taskDefinition(p string, def *modelsv1.TaskDefinition) {
	if def == nil {
		v.add(orName(p, "task_definition"), ruleRequired)
		return
	}
	v.containerSpec(p, specOfTaskDefinition(def))
}

// cellPresence validates a CellPresence found at path p.
func (v *violations) cellPresence(p string, c *modelsv1.CellPresence) {
	if c == nil {
		v.add(orName(p, "cell_presence"), ruleRequired)
		return
	}
	v.requiredIdentifier(field(p, "cell_id"), c.GetCellId())
	v.requiredIdentifier(field(p, "rep_address"), c.GetRepAddress())
	v.identifier(field(p, "zone"), c.GetZone())
	v.identifiers(field(p, "placement_tags"), c.GetPlacementTags(), MaxPlacementTags)
	v.identifiers(field(p, "optional_placement_tags"), c.GetOptionalPlacementTags(), MaxPlacementTags)
	for i, provider := range c.GetRootfsProviders() {
		pp := item(field(p, "rootfs_providers"), i)
		v.requiredIdentifier(field(pp, "name"), provider.GetName())
		v.identifiers(field(pp, "properties"), provider.GetProperties(), MaxPlacementTags)
	}
	if u := c.GetRepUrl(); u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		v.add(field(p, "rep_url"), "must start with http:// or https://")
	}
	capPath := field(p, "capacity")
	if c.GetCapacity() == nil {
		v.add(capPath, ruleRequired)
	} else {
		if c.GetCapacity().GetMemoryMb() <= 0 {
			v.add(field(capPath, "memory_mb"), rulePositive)
		}
		v.nonNegative(field(capPath, "disk_mb"), int64(c.GetCapacity().GetDiskMb()))
		if c.GetCapacity().GetContainers() <= 0 {
			v.add(field(capPath, "containers"), rulePositive)
		}
	}
	for _, k := range sortedKeys(c.GetAnnotations()) {
		if k == "" {
			v.add(entry(field(p, "annotations"), k), "key must not be empty")
		}
		if c.GetAnnotations()[k] == "" {
			v.add(entry(field(p, "annotations"), k), "value must not be empty")
		}
	}
}

// actualLRPKey validates an ActualLRPKey found at path p; requireDomain is false
// where only guid and index are known (retiring through the HTTP kill route).
func (v *violations) actualLRPKey(p string, k *modelsv1.ActualLRPKey, requireDomain bool) {
	if k == nil {
		v.add(p, ruleRequired)
		return
	}
	v.requiredIdentifier(field(p, "process_guid"), k.GetProcessGuid())
	v.nonNegative(field(p, "index"), int64(k.GetIndex()))
	if requireDomain {
		v.requiredIdentifier(field(p, "domain"), k.GetDomain())
	} else {
		v.identifier(field(p, "domain"), k.GetDomain())
	}
}

// actualLRPInstanceKey validates an ActualLRPInstanceKey found at path p.
func (v *violations) actualLRPInstanceKey(p string, k *modelsv1.ActualLRPInstanceKey) {
	if k == nil {
		v.add(p, ruleRequired)
		return
	}
	v.requiredIdentifier(field(p, "instance_guid"), k.GetInstanceGuid())
	v.requiredIdentifier(field(p, "cell_id"), k.GetCellId())
}

// orName is p, or name when p is the top level.
func orName(p, name string) string {
	if p == "" {
		return name
	}
	return p
}

// rootfs checks that a rootfs is set and is a URL with a scheme
// ("preloaded:cflinuxfs4", "docker:///cloudfoundry/cflinuxfs4"), and that a docker:
// rootfs is a docker image URL by lib/dockerref's rules (the rule broken is named).
func (v *violations) rootfs(path, rootfs string) {
	if rootfs == "" {
		v.add(path, ruleRequired)
		return
	}
	if dockerref.IsDocker(rootfs) {
		var perr *dockerref.Error
		if _, err := dockerref.Parse(rootfs); errors.As(err, &perr) {
			v.add(path, "must be a docker image URL: "+perr.Rule)
		}
		return
	}
	if u, err := url.Parse(rootfs); err != nil || u.Scheme == "" {
		v.add(path, "must be a URL with a scheme (e.g. preloaded:cflinuxfs4 or docker:///image)")
	}
}
