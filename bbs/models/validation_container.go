package models

import (
	"encoding/json"
	"maps"
	"slices"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// containerSpec is what a DesiredLRP and a TaskDefinition have in common: the
// container and its main action. Both are validated by the same rules.
type containerSpec struct {
	rootfs                  string
	memoryMB, diskMB, pids  int32
	annotation              string
	env                     []*modelsv1.EnvironmentVariable
	action                  *modelsv1.Action
	egressRules             []*modelsv1.EgressRule
	cachedDependencies      []*modelsv1.CachedDependency
	imageLayers             []*modelsv1.ImageLayer
	legacyDownloadUser      string
	imageUsername, imagePwd string
	volumeMounts            []*modelsv1.VolumeMount
	volumeMountedFiles      []*modelsv1.File
	logRateLimit            *modelsv1.LogRateLimit
	metricTags              map[string]*modelsv1.MetricTagValue
}

func specOfDesiredLRP(l *modelsv1.DesiredLRP) containerSpec {
	return containerSpec{
		rootfs: l.GetRootfs(), memoryMB: l.GetMemoryMb(), diskMB: l.GetDiskMb(), pids: l.GetMaxPids(),
		annotation: l.GetAnnotation(), env: l.GetEnv(), action: l.GetAction(),
		egressRules: l.GetEgressRules(), cachedDependencies: l.GetCachedDependencies(),
		imageLayers: l.GetImageLayers(), legacyDownloadUser: l.GetLegacyDownloadUser(),
		imageUsername: l.GetImageUsername(), imagePwd: l.GetImagePassword(),
		volumeMounts: l.GetVolumeMounts(), volumeMountedFiles: l.GetVolumeMountedFiles(),
		logRateLimit: l.GetLogRateLimit(), metricTags: l.GetMetricTags(),
	}
}

func specOfTaskDefinition(d *modelsv1.TaskDefinition) containerSpec {
	return containerSpec{
		rootfs: d.GetRootfs(), memoryMB: d.GetMemoryMb(), diskMB: d.GetDiskMb(), pids: d.GetMaxPids(),
		annotation: d.GetAnnotation(), env: d.GetEnv(), action: d.GetAction(),
		egressRules: d.GetEgressRules(), cachedDependencies: d.GetCachedDependencies(),
		imageLayers: d.GetImageLayers(), legacyDownloadUser: d.GetLegacyDownloadUser(),
		imageUsername: d.GetImageUsername(), imagePwd: d.GetImagePassword(),
		volumeMounts: d.GetVolumeMounts(), volumeMountedFiles: d.GetVolumeMountedFiles(),
		logRateLimit: d.GetLogRateLimit(), metricTags: d.GetMetricTags(),
	}
}

// containerSpec validates the shared part of a DesiredLRP or TaskDefinition at path p.
func (v *violations) containerSpec(p string, s containerSpec) {
	v.rootfs(field(p, "rootfs"), s.rootfs)
	v.nonNegative(field(p, "memory_mb"), int64(s.memoryMB))
	v.nonNegative(field(p, "disk_mb"), int64(s.diskMB))
	v.nonNegative(field(p, "max_pids"), int64(s.pids))
	v.annotation(field(p, "annotation"), s.annotation)
	v.env(field(p, "env"), s.env)
	v.action(field(p, "action"), s.action)
	for i, r := range s.egressRules {
		v.egressRule(item(field(p, "egress_rules"), i), r)
	}
	for i, d := range s.cachedDependencies {
		v.cachedDependency(item(field(p, "cached_dependencies"), i), d)
	}
	for i, l := range s.imageLayers {
		v.imageLayer(item(field(p, "image_layers"), i), l, field(p, "legacy_download_user"), s.legacyDownloadUser)
	}
	v.together(p, "image_username", s.imageUsername, "image_password", s.imagePwd)
	for i, m := range s.volumeMounts {
		v.volumeMount(item(field(p, "volume_mounts"), i), m)
	}
	v.volumeMountedFiles(field(p, "volume_mounted_files"), s.volumeMountedFiles)
	if s.logRateLimit.GetBytesPerSecond() < -1 {
		v.add(field(p, "log_rate_limit.bytes_per_second"), "must be >= -1")
	}
	v.metricTags(field(p, "metric_tags"), s.metricTags)
}

// env checks that every environment variable has a name.
func (v *violations) env(path string, env []*modelsv1.EnvironmentVariable) {
	for i, e := range env {
		v.required(field(item(path, i), "name"), e.GetName())
	}
}

// routes checks that every router value encodes as JSON and that together they
// stay within MaxRoutesLength bytes.
func (v *violations) routes(path string, routes map[string]*structpb.Value) {
	total := 0
	for _, name := range sortedKeys(routes) {
		b, err := json.Marshal(routes[name].AsInterface())
		if err != nil {
			v.add(entry(path, name), "must be valid JSON")
			continue
		}
		total += len(b)
	}
	if total > MaxRoutesLength {
		v.addf(path, "must be at most %d bytes of JSON in total", MaxRoutesLength)
	}
}

// metricTags checks that each tag is exactly one of static or dynamic.
func (v *violations) metricTags(path string, tags map[string]*modelsv1.MetricTagValue) {
	for _, name := range sortedKeys(tags) {
		t := tags[name]
		hasStatic := t.GetStatic() != ""
		hasDynamic := t.GetDynamic() != modelsv1.MetricTagValue_DYNAMIC_UNSPECIFIED
		if hasStatic == hasDynamic {
			v.add(entry(path, name), "must set exactly one of static or dynamic")
			continue
		}
		if hasDynamic && t.GetDynamic() != modelsv1.MetricTagValue_DYNAMIC_INDEX &&
			t.GetDynamic() != modelsv1.MetricTagValue_DYNAMIC_INSTANCE_GUID {
			v.add(field(entry(path, name), "dynamic"), "must be INDEX or INSTANCE_GUID")
		}
	}
}

// metricsGUIDMatchesSourceID checks that a source_id tag agrees with metrics_guid.
func (v *violations) metricsGUIDMatchesSourceID(p string, tags map[string]*modelsv1.MetricTagValue, metricsGUID string) {
	t, ok := tags[sourceIDTag]
	if metricsGUID == "" || !ok || t.GetStatic() == "" || t.GetStatic() == metricsGUID {
		return
	}
	v.add(field(entry(field(p, "metric_tags"), sourceIDTag), "static"), "must equal metrics_guid")
}

// volumeMountedFiles checks the total size of the files written into the container.
func (v *violations) volumeMountedFiles(path string, files []*modelsv1.File) {
	total := 0
	for _, f := range files {
		total += len(f.GetContent())
	}
	if total > MaxVolumeMountedFilesLength {
		v.addf(path, "total content must be at most %d bytes", MaxVolumeMountedFilesLength)
	}
}

// volumeMount checks one volume mount: driver, mode and exactly one device.
func (v *violations) volumeMount(path string, m *modelsv1.VolumeMount) {
	if m == nil {
		v.add(path, ruleRequired)
		return
	}
	v.required(field(path, "driver"), m.GetDriver())
	v.oneOf(field(path, "mode"), m.GetMode(), false, "r", "rw")
	switch {
	case m.GetShared() != nil && m.GetDedicated() != nil:
		v.add(path, "must set exactly one of shared or dedicated")
	case m.GetShared() != nil:
		v.required(field(path, "shared.volume_id"), m.GetShared().GetVolumeId())
	case m.GetDedicated() != nil:
		v.required(field(path, "dedicated.mounter_id"), m.GetDedicated().GetMounterId())
	default:
		v.add(path, "must set exactly one of shared or dedicated")
	}
}

// imageLayer checks one image layer. EXCLUSIVE layers need a digest and the
// parent's legacy_download_user (given with its path).
func (v *violations) imageLayer(path string, l *modelsv1.ImageLayer, userPath, legacyDownloadUser string) {
	if l == nil {
		v.add(path, ruleRequired)
		return
	}
	v.required(field(path, "url"), l.GetUrl())
	v.required(field(path, "destination_path"), l.GetDestinationPath())
	exclusive := l.GetLayerType() == modelsv1.ImageLayer_LAYER_TYPE_EXCLUSIVE
	if !exclusive && l.GetLayerType() != modelsv1.ImageLayer_LAYER_TYPE_SHARED {
		v.add(field(path, "layer_type"), "must be SHARED or EXCLUSIVE")
	}
	switch l.GetMediaType() {
	case modelsv1.ImageLayer_MEDIA_TYPE_TGZ, modelsv1.ImageLayer_MEDIA_TYPE_TAR, modelsv1.ImageLayer_MEDIA_TYPE_ZIP:
	default:
		v.add(field(path, "media_type"), "must be TGZ, TAR or ZIP")
	}
	v.together(path, "digest_algorithm", l.GetDigestAlgorithm(), "digest_value", l.GetDigestValue())
	if l.GetDigestAlgorithm() != "" {
		v.oneOf(field(path, "digest_algorithm"), l.GetDigestAlgorithm(), true, "sha256", "sha512")
	}
	if exclusive {
		if l.GetDigestAlgorithm() == "" && l.GetDigestValue() == "" {
			v.add(field(path, "digest_algorithm"), "required for EXCLUSIVE layers")
			v.add(field(path, "digest_value"), "required for EXCLUSIVE layers")
		}
		if legacyDownloadUser == "" {
			v.add(userPath, "required when an image layer is EXCLUSIVE")
		}
	}
}

// checkDefinition checks the health checks of a DesiredLRP.
func (v *violations) checkDefinition(path string, d *modelsv1.CheckDefinition) {
	if d == nil {
		return
	}
	for i, c := range d.GetChecks() {
		v.check(item(field(path, "checks"), i), c)
	}
	for i, c := range d.GetReadinessChecks() {
		v.check(item(field(path, "readiness_checks"), i), c)
	}
}

// check checks that a check is exactly one of http or tcp, on a valid port.
func (v *violations) check(path string, c *modelsv1.Check) {
	switch {
	case c.GetHttpCheck() != nil && c.GetTcpCheck() != nil, c.GetHttpCheck() == nil && c.GetTcpCheck() == nil:
		v.add(path, "must set exactly one of http_check or tcp_check")
	case c.GetHttpCheck() != nil:
		v.port(field(path, "http_check.port"), c.GetHttpCheck().GetPort())
	default:
		v.port(field(path, "tcp_check.port"), c.GetTcpCheck().GetPort())
	}
}

// sidecars checks that each sidecar has a valid action and non-negative resources.
func (v *violations) sidecars(path string, sidecars []*modelsv1.Sidecar) {
	for i, s := range sidecars {
		p := item(path, i)
		if s == nil {
			v.add(p, ruleRequired)
			continue
		}
		v.action(field(p, "action"), s.GetAction())
		v.nonNegative(field(p, "memory_mb"), int64(s.GetMemoryMb()))
		v.nonNegative(field(p, "disk_mb"), int64(s.GetDiskMb()))
	}
}

// sortedKeys returns a map's keys in order, so that messages are deterministic.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
