package authz

import (
	"sort"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// CommonPolicy admits every authenticated caller to what lib/grpcserver registers on
// every server: grpc.health.v1 and server reflection (which shows the API's schema,
// no state).
func CommonPolicy() Policy {
	everyone := Allow(Roles...)
	return Policy{
		healthpb.Health_Check_FullMethodName:                                   everyone,
		healthpb.Health_List_FullMethodName:                                    everyone,
		healthpb.Health_Watch_FullMethodName:                                   everyone,
		reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName:      everyone,
		reflectionv1alpha.ServerReflection_ServerReflectionInfo_FullMethodName: everyone,
	}
}

// ServerMethods are the full method names of every method registered on srv.
func ServerMethods(srv *grpc.Server) []string {
	var methods []string
	for service, info := range srv.GetServiceInfo() {
		for _, m := range info.Methods {
			methods = append(methods, "/"+service+"/"+m.Name)
		}
	}
	sort.Strings(methods)
	return methods
}

// PackageMethods are the full method names of every service of the protobuf package
// pkg ("drover.bbs.v1") in the global registry: import the generated package first.
func PackageMethods(pkg protoreflect.FullName) []string {
	var methods []string
	protoregistry.GlobalFiles.RangeFilesByPackage(pkg, func(f protoreflect.FileDescriptor) bool {
		for i := 0; i < f.Services().Len(); i++ {
			s := f.Services().Get(i)
			for j := 0; j < s.Methods().Len(); j++ {
				methods = append(methods, "/"+string(s.FullName())+"/"+string(s.Methods().Get(j).Name()))
			}
		}
		return true
	})
	sort.Strings(methods)
	return methods
}

// Unruled are those of methods that p has no rule for (a test of every service
// asserts there are none, so that a new RPC without a rule fails the build).
func (p Policy) Unruled(methods []string) []string {
	var missing []string
	for _, m := range methods {
		if _, ok := p[m]; !ok {
			missing = append(missing, m)
		}
	}
	return missing
}
