package models

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"drover.dev/lib/dockerref"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// containerSpec is what a DesiredLRP and a TaskDefinition have in common: the
// container and its main action. Both are validated by the same rules.
type containerSpec struct {
	logGUID, logSource      string
	metricsGUID             string
	placementTags           []string
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
		logGUID: l.GetLogGuid(), logSource: l.GetLogSource(), metricsGUID: l.GetMetricsGuid(),
		placementTags: l.GetPlacementTags(),
		rootfs:        l.GetRootfs(), memoryMB: l.GetMemoryMb(), diskMB: l.GetDiskMb(), pids: l.GetMaxPids(),
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
		logGUID: d.GetLogGuid(), logSource: d.GetLogSource(), metricsGUID: d.GetMetricsGuid(),
		placementTags: d.GetPlacementTags(),
		rootfs:        d.GetRootfs(), memoryMB: d.GetMemoryMb(), diskMB: d.GetDiskMb(), pids: d.GetMaxPids(),
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
	v.imageUser = dockerref.IsDocker(s.rootfs)
	v.identifier(field(p, "log_guid"), s.logGUID)
	v.identifier(field(p, "log_source"), s.logSource)
	v.identifier(field(p, "metrics_guid"), s.metricsGUID)
	v.identifiers(field(p, "placement_tags"), s.placementTags, MaxPlacementTags)
	v.rootfs(field(p, "rootfs"), s.rootfs)
	v.nonNegative(field(p, "memory_mb"), int64(s.memoryMB))
	v.nonNegative(field(p, "disk_mb"), int64(s.diskMB))
	v.nonNegative(field(p, "max_pids"), int64(s.pids))
	v.annotation(field(p, "annotation"), s.annotation)
	v.env(field(p, "env"), s.env)
	v.action(field(p, "action"), s.action)
	v.egressRules(field(p, "egress_rules"), s.egressRules)
	for i, d := range s.cachedDependencies {
		v.cachedDependency(item(field(p, "cached_dependencies"), i), d)
	}
	for i, l := range s.imageLayers {
		v.imageLayer(item(field(p, "image_layers"), i), l, field(p, "legacy_download_user"), s.legacyDownloadUser)
	}
	v.identifier(field(p, "legacy_download_user"), s.legacyDownloadUser)
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

// env checks that there are at most MaxEnvironmentVariables variables and that every
// one has a name that is an identifier without "=".
func (v *violations) env(path string, env []*modelsv1.EnvironmentVariable) {
	if len(env) > MaxEnvironmentVariables {
		v.addf(path, "must have at most %d variables", MaxEnvironmentVariables)
		return
	}
	for i, e := range env {
		p := field(item(path, i), "name")
		v.requiredIdentifier(p, e.GetName())
		if strings.Contains(e.GetName(), "=") {
			v.add(p, `must not contain "="`)
		}
	}
}

// egressRules checks the number of egress rules and each rule.
func (v *violations) egressRules(path string, rules []*modelsv1.EgressRule) {
	if len(rules) > MaxEgressRules {
		v.addf(path, "must have at most %d rules", MaxEgressRules)
		return
	}
	for i, r := range rules {
		v.egressRule(item(path, i), r)
	}
}

// ports checks the container ports of a DesiredLRP: at most MaxPorts, each valid and
// none twice.
func (v *violations) ports(path string, ports []uint32) {
	if len(ports) > MaxPorts {
		v.addf(path, "must have at most %d ports", MaxPorts)
		return
	}
	first := make(map[uint32]int, len(ports))
	for i, port := range ports {
		v.port(item(path, i), port)
		if j, seen := first[port]; seen {
			v.addf(item(path, i), "must not repeat port %d (%s)", port, item(path, j))
			continue
		}
		first[port] = i
	}
}

// routes checks that every router value encodes as JSON without NUL characters (a
// Postgres JSONB column cannot hold them), nests at most MaxRoutesDepth levels, and
// that together they stay within MaxRoutesLength bytes. Router names are map keys,
// checked with every other key by the string bounds.
func (v *violations) routes(path string, routes map[string]*structpb.Value) {
	total := 0
	for _, name := range sortedKeys(routes) {
		value := routes[name]
		switch depth, hasNUL := jsonShape(value, 0); {
		case depth > MaxRoutesDepth:
			v.addf(entry(path, name), "must nest at most %d levels of arrays and objects", MaxRoutesDepth)
			continue
		case hasNUL:
			v.add(entry(path, name), "must not contain NUL characters")
			continue
		}
		b, err := json.Marshal(value.AsInterface())
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

// jsonShape is how deeply the JSON value nests arrays and objects (a scalar is 0) and
// whether a string or key in it holds NUL. It looks no deeper than MaxRoutesDepth+1
// levels below depth.
func jsonShape(value *structpb.Value, depth int) (int, bool) {
	if depth > MaxRoutesDepth {
		return depth, false
	}
	deepest, hasNUL := depth, false
	visit := func(child *structpb.Value) {
		d, nul := jsonShape(child, depth+1)
		deepest, hasNUL = max(deepest, d), hasNUL || nul
	}
	switch k := value.GetKind().(type) {
	case *structpb.Value_StringValue:
		return depth, strings.ContainsRune(k.StringValue, 0)
	case *structpb.Value_ListValue:
		deepest = depth + 1
		for _, child := range k.ListValue.GetValues() {
			visit(child)
		}
	case *structpb.Value_StructValue:
		deepest = depth + 1
		for key, child := range k.StructValue.GetFields() {
			hasNUL = hasNUL || strings.ContainsRune(key, 0)
			visit(child)
		}
	}
	return deepest, hasNUL
}

// metricTags checks that there are at most MaxMetricTags tags and that each is exactly
// one of static or dynamic; a static value is an identifier.
func (v *violations) metricTags(path string, tags map[string]*modelsv1.MetricTagValue) {
	if len(tags) > MaxMetricTags {
		v.addf(path, "must have at most %d tags", MaxMetricTags)
		return
	}
	for _, name := range sortedKeys(tags) {
		t := tags[name]
		v.identifier(field(entry(path, name), "static"), t.GetStatic())
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
	v.requiredIdentifier(field(path, "driver"), m.GetDriver())
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
	v.identifier(field(path, "log_source"), d.GetLogSource())
}

// check checks that a check is exactly one of http or tcp, on a valid port.
func (v *violations) check(path string, c *modelsv1.Check) {
	switch {
	case c.GetHttpCheck() != nil && c.GetTcpCheck() != nil, c.GetHttpCheck() == nil && c.GetTcpCheck() == nil:
		v.add(path, "must set exactly one of http_check or tcp_check")
	case c.GetHttpCheck() != nil:
		h, p := c.GetHttpCheck(), field(path, "http_check")
		v.port(field(p, "port"), h.GetPort())
		v.durationMs(field(p, "request_timeout_ms"), h.GetRequestTimeoutMs())
		v.durationMs(field(p, "interval_ms"), h.GetIntervalMs())
	default:
		t, p := c.GetTcpCheck(), field(path, "tcp_check")
		v.port(field(p, "port"), t.GetPort())
		v.durationMs(field(p, "connect_timeout_ms"), t.GetConnectTimeoutMs())
		v.durationMs(field(p, "interval_ms"), t.GetIntervalMs())
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
