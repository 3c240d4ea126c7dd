package translate

import (
	"strconv"
	"time"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// CPU weight bounds: a weight is clamped into [MinCPUWeight, MaxCPUWeight] (0, the
// proto default, becomes the smallest weight rather than "no share at all").
const (
	MinCPUWeight = 1
	MaxCPUWeight = 100
)

// CPUWeight clamps a requested cpu_weight into the allowed range.
func CPUWeight(w uint32) uint32 { return min(max(w, MinCPUWeight), MaxCPUWeight) }

// LRPRunRequest is how to run an instance of lrp at index in container guid: the
// LRP's run info, plus the instance env (INSTANCE_*, CF_INSTANCE_INDEX/GUID).
func LRPRunRequest(guid string, index int32, lrp *modelsv1.DesiredLRP) executor.RunRequest {
	idx := strconv.Itoa(int(index))
	env := envVars(lrp.GetEnv())
	env = append(env,
		executor.EnvVar{Name: "INSTANCE_GUID", Value: guid},
		executor.EnvVar{Name: "INSTANCE_INDEX", Value: idx},
		executor.EnvVar{Name: "CF_INSTANCE_GUID", Value: guid},
		executor.EnvVar{Name: "CF_INSTANCE_INDEX", Value: idx},
	)
	return executor.RunRequest{
		Guid: guid,
		RunInfo: executor.RunInfo{
			RootFS:             lrp.GetRootfs(),
			CPUWeight:          CPUWeight(lrp.GetCpuWeight()),
			Privileged:         lrp.GetPrivileged(),
			Ports:              append([]uint32(nil), lrp.GetPorts()...),
			Env:                env,
			CachedDependencies: lrp.GetCachedDependencies(),
			Setup:              lrp.GetSetup(),
			Action:             lrp.GetAction(),
			Monitor:            lrp.GetMonitor(),
			CheckDefinition:    lrp.GetCheckDefinition(),
			StartTimeout:       time.Duration(lrp.GetStartTimeout()) * time.Second,
			EgressRules:        lrp.GetEgressRules(),
			LogGuid:            lrp.GetLogGuid(),
			LogIndex:           int(index),
			LogSource:          lrp.GetLogSource(),
			ImageUsername:      lrp.GetImageUsername(),
			ImagePassword:      lrp.GetImagePassword(),
			ImageLayers:        lrp.GetImageLayers(),
		},
	}
}

// TaskRunRequest is how to run task in its container (guid = task guid). The result
// file is remembered as a tag so that completion can read it even after a restart.
func TaskRunRequest(task *modelsv1.Task) executor.RunRequest {
	def := task.GetTaskDefinition()
	req := executor.RunRequest{
		Guid: task.GetTaskGuid(),
		RunInfo: executor.RunInfo{
			RootFS:             def.GetRootfs(),
			CPUWeight:          CPUWeight(def.GetCpuWeight()),
			Privileged:         def.GetPrivileged(),
			Env:                envVars(def.GetEnv()),
			CachedDependencies: def.GetCachedDependencies(),
			Action:             def.GetAction(),
			EgressRules:        def.GetEgressRules(),
			LogGuid:            def.GetLogGuid(),
			LogSource:          def.GetLogSource(),
			ImageUsername:      def.GetImageUsername(),
			ImagePassword:      def.GetImagePassword(),
			ImageLayers:        def.GetImageLayers(),
		},
	}
	if def.GetResultFile() != "" {
		req.Tags = map[string]string{executor.TagResultFile: def.GetResultFile()}
	}
	return req
}

func envVars(vars []*modelsv1.EnvironmentVariable) []executor.EnvVar {
	out := make([]executor.EnvVar, 0, len(vars)+4)
	for _, v := range vars {
		out = append(out, executor.EnvVar{Name: v.GetName(), Value: v.GetValue()})
	}
	return out
}

// NetInfo is how the BBS records a running container's addresses: the host address and
// host ports, the container address, and routers preferring the host address.
func NetInfo(n executor.NetInfo) *modelsv1.ActualLRPNetInfo {
	out := &modelsv1.ActualLRPNetInfo{
		Address:          n.ExternalIP,
		InstanceAddress:  n.InternalIP,
		PreferredAddress: modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST,
	}
	for _, p := range n.Ports {
		out.Ports = append(out.Ports, &modelsv1.PortMapping{ContainerPort: p.ContainerPort, HostPort: p.HostPort})
	}
	return out
}
