package models

import (
	"slices"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/proto"
)

// SchedulingInfo is the light view of a DesiredLRP that placement and bulk readers
// need. volume_drivers lists the driver of every volume mount. The view shares no
// memory with lrp. nil gives nil.
func SchedulingInfo(lrp *modelsv1.DesiredLRP) *modelsv1.DesiredLRPSchedulingInfo {
	if lrp == nil {
		return nil
	}
	c := proto.CloneOf(lrp)
	return &modelsv1.DesiredLRPSchedulingInfo{
		ProcessGuid:     c.GetProcessGuid(),
		Domain:          c.GetDomain(),
		LogGuid:         c.GetLogGuid(),
		Annotation:      c.GetAnnotation(),
		Instances:       c.GetInstances(),
		Rootfs:          c.GetRootfs(),
		Resource:        &modelsv1.Resource{MemoryMb: c.GetMemoryMb(), DiskMb: c.GetDiskMb(), MaxPids: c.GetMaxPids()},
		Routes:          c.GetRoutes(),
		ModificationTag: c.GetModificationTag(),
		PlacementTags:   c.GetPlacementTags(),
		VolumeDrivers:   volumeDrivers(c.GetVolumeMounts()),
		UpdateStrategy:  c.GetUpdateStrategy(),
	}
}

// RunInfo is everything of a DesiredLRP that a cell needs to run an instance (the
// part the store encrypts). The view shares no memory with lrp. nil gives nil.
func RunInfo(lrp *modelsv1.DesiredLRP) *modelsv1.DesiredLRPRunInfo {
	if lrp == nil {
		return nil
	}
	c := proto.CloneOf(lrp)
	return &modelsv1.DesiredLRPRunInfo{
		ProcessGuid:                   c.GetProcessGuid(),
		Domain:                        c.GetDomain(),
		LogGuid:                       c.GetLogGuid(),
		Env:                           c.GetEnv(),
		Setup:                         c.GetSetup(),
		Action:                        c.GetAction(),
		Monitor:                       c.GetMonitor(),
		StartTimeout:                  c.GetStartTimeout(),
		Privileged:                    c.GetPrivileged(),
		CpuWeight:                     c.GetCpuWeight(),
		Ports:                         c.GetPorts(),
		EgressRules:                   c.GetEgressRules(),
		LogSource:                     c.GetLogSource(),
		MetricsGuid:                   c.GetMetricsGuid(),
		CreatedAt:                     c.GetCreatedAt(),
		CachedDependencies:            c.GetCachedDependencies(),
		TrustedSystemCertificatesPath: c.GetTrustedSystemCertificatesPath(),
		VolumeMounts:                  c.GetVolumeMounts(),
		VolumeMountedFiles:            c.GetVolumeMountedFiles(),
		Network:                       c.GetNetwork(),
		ImageLayers:                   c.GetImageLayers(),
		ImageUsername:                 c.GetImageUsername(),
		ImagePassword:                 c.GetImagePassword(),
		LegacyDownloadUser:            c.GetLegacyDownloadUser(),
		CheckDefinition:               c.GetCheckDefinition(),
		Sidecars:                      c.GetSidecars(),
		LogRateLimit:                  c.GetLogRateLimit(),
		CertificateProperties:         c.GetCertificateProperties(),
		MetricTags:                    c.GetMetricTags(),
		AllowSsh:                      c.GetAllowSsh(),
	}
}

// RoutingInfo is the subset of a DesiredLRP the route-emitter needs. The view
// shares no memory with lrp. nil gives nil.
func RoutingInfo(lrp *modelsv1.DesiredLRP) *modelsv1.DesiredLRPRoutingInfo {
	if lrp == nil {
		return nil
	}
	return &modelsv1.DesiredLRPRoutingInfo{
		ProcessGuid:     lrp.GetProcessGuid(),
		Domain:          lrp.GetDomain(),
		LogGuid:         lrp.GetLogGuid(),
		Instances:       lrp.GetInstances(),
		Routes:          cloneMap(lrp.GetRoutes()),
		ModificationTag: proto.CloneOf(lrp.GetModificationTag()),
		MetricTags:      cloneMap(lrp.GetMetricTags()),
	}
}

// DesiredLRPFromViews joins a scheduling and a run view back into the DesiredLRP
// they were taken from: DesiredLRPFromViews(SchedulingInfo(x), RunInfo(x)) equals x.
// Identity fields come from si, or from ri when si lacks them. The result shares no
// memory with the views; both nil gives nil.
func DesiredLRPFromViews(si *modelsv1.DesiredLRPSchedulingInfo, ri *modelsv1.DesiredLRPRunInfo) *modelsv1.DesiredLRP {
	if si == nil && ri == nil {
		return nil
	}
	si, ri = proto.CloneOf(si), proto.CloneOf(ri)
	return &modelsv1.DesiredLRP{
		ProcessGuid:                   firstNonEmpty(si.GetProcessGuid(), ri.GetProcessGuid()),
		Domain:                        firstNonEmpty(si.GetDomain(), ri.GetDomain()),
		LogGuid:                       firstNonEmpty(si.GetLogGuid(), ri.GetLogGuid()),
		Instances:                     si.GetInstances(),
		Rootfs:                        si.GetRootfs(),
		MemoryMb:                      si.GetResource().GetMemoryMb(),
		DiskMb:                        si.GetResource().GetDiskMb(),
		MaxPids:                       si.GetResource().GetMaxPids(),
		Routes:                        si.GetRoutes(),
		Annotation:                    si.GetAnnotation(),
		ModificationTag:               si.GetModificationTag(),
		PlacementTags:                 si.GetPlacementTags(),
		UpdateStrategy:                si.GetUpdateStrategy(),
		Env:                           ri.GetEnv(),
		CpuWeight:                     ri.GetCpuWeight(),
		Privileged:                    ri.GetPrivileged(),
		Setup:                         ri.GetSetup(),
		Action:                        ri.GetAction(),
		Monitor:                       ri.GetMonitor(),
		StartTimeout:                  ri.GetStartTimeout(),
		Ports:                         ri.GetPorts(),
		LogSource:                     ri.GetLogSource(),
		MetricsGuid:                   ri.GetMetricsGuid(),
		EgressRules:                   ri.GetEgressRules(),
		CheckDefinition:               ri.GetCheckDefinition(),
		CachedDependencies:            ri.GetCachedDependencies(),
		TrustedSystemCertificatesPath: ri.GetTrustedSystemCertificatesPath(),
		VolumeMounts:                  ri.GetVolumeMounts(),
		VolumeMountedFiles:            ri.GetVolumeMountedFiles(),
		Network:                       ri.GetNetwork(),
		ImageLayers:                   ri.GetImageLayers(),
		ImageUsername:                 ri.GetImageUsername(),
		ImagePassword:                 ri.GetImagePassword(),
		LegacyDownloadUser:            ri.GetLegacyDownloadUser(),
		MetricTags:                    ri.GetMetricTags(),
		Sidecars:                      ri.GetSidecars(),
		LogRateLimit:                  ri.GetLogRateLimit(),
		CertificateProperties:         ri.GetCertificateProperties(),
		CreatedAt:                     ri.GetCreatedAt(),
		AllowSsh:                      ri.GetAllowSsh(),
	}
}

// ApplyDesiredLRPUpdate returns a changed clone of lrp: instances, annotation, image
// credentials and allow_ssh when set in u; routes replaced when u.routes is non-empty or
// u.clear_routes is set; metric_tags replaced when u.metric_tags is non-empty (a
// source_id tag is then re-derived from metrics_guid as PrepareDesiredLRP does).
// It always bumps modification_tag.index, as Diego does. lrp is not modified; a
// nil lrp gives nil.
func ApplyDesiredLRPUpdate(lrp *modelsv1.DesiredLRP, u *modelsv1.DesiredLRPUpdate) *modelsv1.DesiredLRP {
	if lrp == nil {
		return nil
	}
	c := proto.CloneOf(lrp)
	if u != nil {
		u = proto.CloneOf(u)
		if u.Instances != nil {
			c.Instances = u.GetInstances()
		}
		if u.Annotation != nil {
			c.Annotation = u.GetAnnotation()
		}
		if u.ImageUsername != nil {
			c.ImageUsername = u.GetImageUsername()
		}
		if u.ImagePassword != nil {
			c.ImagePassword = u.GetImagePassword()
		}
		if u.AllowSsh != nil {
			c.AllowSsh = u.GetAllowSsh()
		}
		if u.GetClearRoutes() || len(u.GetRoutes()) > 0 {
			c.Routes = u.GetRoutes()
		}
		if len(u.GetMetricTags()) > 0 {
			c.MetricTags = withSourceIDTag(u.GetMetricTags(), c.GetMetricsGuid())
		}
	}
	if c.ModificationTag == nil {
		c.ModificationTag = &modelsv1.ModificationTag{}
	}
	c.ModificationTag.Index++
	return c
}

// LRPStartRequest asks for the given indices of the LRP described by si to be
// placed. nil si gives nil.
func LRPStartRequest(si *modelsv1.DesiredLRPSchedulingInfo, indices []int32) *modelsv1.LRPStartRequest {
	if si == nil {
		return nil
	}
	return &modelsv1.LRPStartRequest{
		ProcessGuid:   si.GetProcessGuid(),
		Domain:        si.GetDomain(),
		Indices:       slices.Clone(indices),
		Resource:      cloneResource(si.GetResource()),
		Rootfs:        si.GetRootfs(),
		PlacementTags: slices.Clone(si.GetPlacementTags()),
		VolumeDrivers: slices.Clone(si.GetVolumeDrivers()),
	}
}

// TaskStartRequest asks for task t to be placed. nil t gives nil.
func TaskStartRequest(t *modelsv1.Task) *modelsv1.TaskStartRequest {
	if t == nil {
		return nil
	}
	def := t.GetTaskDefinition()
	return &modelsv1.TaskStartRequest{
		TaskGuid:      t.GetTaskGuid(),
		Domain:        t.GetDomain(),
		Resource:      &modelsv1.Resource{MemoryMb: def.GetMemoryMb(), DiskMb: def.GetDiskMb(), MaxPids: def.GetMaxPids()},
		Rootfs:        def.GetRootfs(),
		PlacementTags: slices.Clone(def.GetPlacementTags()),
		VolumeDrivers: volumeDrivers(def.GetVolumeMounts()),
	}
}

// volumeDrivers lists the driver of each volume mount, in order.
func volumeDrivers(mounts []*modelsv1.VolumeMount) []string {
	if len(mounts) == 0 {
		return nil
	}
	drivers := make([]string, 0, len(mounts))
	for _, m := range mounts {
		drivers = append(drivers, m.GetDriver())
	}
	return drivers
}

// cloneResource copies a Resource; a nil one becomes an empty one.
func cloneResource(r *modelsv1.Resource) *modelsv1.Resource {
	return &modelsv1.Resource{MemoryMb: r.GetMemoryMb(), DiskMb: r.GetDiskMb(), MaxPids: r.GetMaxPids()}
}

// cloneMap deep-copies a map of messages; nil stays nil.
func cloneMap[M proto.Message](m map[string]M) map[string]M {
	if m == nil {
		return nil
	}
	out := make(map[string]M, len(m))
	for k, v := range m {
		out[k] = proto.CloneOf(v)
	}
	return out
}

// firstNonEmpty is a, or b when a is empty.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
