package push

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// Paths and names of an app's container and LRP.
const (
	appHome = "/home/vcap"
	// appDir is where the droplet's app files are (the launcher's working directory).
	appDir = appHome + "/app"
	// lifecycleDir holds the lifecycle bundle with the launcher.
	lifecycleDir = "/tmp/lifecycle"
	// AppPort is the port apps listen on ($PORT), checked and routed.
	AppPort = 8080
	// RouterName is the routes key the route-emitter reads.
	RouterName = "cf-router"
	// StagingLogSource tags the staging task's log lines.
	StagingLogSource = "STG"
	// AppLogSource tags the app's log lines.
	AppLogSource    = "APP/PROC/WEB"
	lrpStartTimeout = 60
)

// LRPAnnotation is the JSON annotation of an app's LRP.
type LRPAnnotation struct {
	AppName       string `json:"app_name"`
	AppGUID       string `json:"app_guid"`
	Version       string `json:"version"`
	PackageSHA256 string `json:"package_sha256"`
	DropletKey    string `json:"droplet_key"`
	// Buildpack is the final buildpack that staged the droplet.
	Buildpack string `json:"buildpack,omitempty"`
	// DockerImage is the pinned image (docker://HOST/REPO@sha256:...) of a docker push;
	// docker apps have no package and no droplet.
	DockerImage string `json:"docker_image,omitempty"`
	// PushedAt is when the push that desired the LRP ran (RFC 3339, UTC); a restart
	// keeps it.
	PushedAt string `json:"pushed_at,omitempty"`
}

// DesiredLRP runs a staged droplet on the result's rootfs: setup downloads the
// droplet into /home/vcap as the stack's user (checksum verified) and the lifecycle
// bundle into /tmp/lifecycle; the action runs the launcher with the start command in
// /home/vcap/app as that user with PORT=8080 and the app's env; a TCP check on 8080
// tells when an instance is up, and the cf-router route sends Name.Domain to 8080.
func DesiredLRP(app App, staged *stagerv1.StagingResult, urls URLs) *modelsv1.DesiredLRP {
	pg := app.ProcessGUID()
	annotation, _ := json.Marshal(LRPAnnotation{ // cannot fail
		AppName: app.Name, AppGUID: app.GUID(), Version: app.Version(),
		PackageSHA256: app.PackageSHA256, DropletKey: staged.GetDropletKey(), Buildpack: staged.GetBuildpack(),
	})
	env := make([]*modelsv1.EnvironmentVariable, 0, len(app.Env)+1)
	for _, e := range app.Env {
		env = append(env, &modelsv1.EnvironmentVariable{Name: e.Name, Value: e.Value})
	}
	env = append(env, &modelsv1.EnvironmentVariable{Name: "PORT", Value: fmt.Sprint(AppPort)})
	return &modelsv1.DesiredLRP{
		ProcessGuid: pg,
		Domain:      AppsDomain,
		Instances:   app.Instances,
		Rootfs:      staged.GetRootfs(),
		MemoryMb:    app.MemoryMB,
		DiskMb:      app.DiskMB,
		Env:         env,
		Setup: serial(
			download(&modelsv1.DownloadAction{
				Artifact: "droplet", From: urls.BlobURL(staged.GetDropletKey()), To: appHome,
				CacheKey: "droplet-" + pg, User: staged.GetUser(),
				ChecksumAlgorithm: checksumAlgorithm(staged.GetDropletSha256()), ChecksumValue: staged.GetDropletSha256(),
			}),
			download(&modelsv1.DownloadAction{
				Artifact: "lifecycle", From: staged.GetLifecycleUrl(), To: lifecycleDir, CacheKey: "lifecycle", User: "root",
			}),
		),
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path: lifecycleDir + "/launcher",
			Args: []string{appDir, staged.GetStartCommand()},
			User: staged.GetUser(),
			Env:  env,
		}}},
		Ports:           []uint32{AppPort},
		CheckDefinition: &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: AppPort}}}},
		StartTimeout:    lrpStartTimeout,
		Routes:          Routes(app.Hostname()),
		LogGuid:         app.GUID(),
		Annotation:      string(annotation),
	}
}

// CheckStagingResult refuses a result that cannot be run, naming every missing field.
func CheckStagingResult(r *stagerv1.StagingResult) error {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"droplet_key", r.GetDropletKey()}, {"start_command", r.GetStartCommand()}, {"rootfs", r.GetRootfs()},
		{"user", r.GetUser()}, {"lifecycle_url", r.GetLifecycleUrl()},
	} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the stager's result has no %s", strings.Join(missing, ", "))
	}
	return nil
}

// Routes is the routes field routing hostname to the app port on cf-router.
func Routes(hostname string) map[string]*structpb.Value { return RoutesToPort(hostname, AppPort) }

// RoutesToPort is the routes field routing hostname to port on cf-router.
func RoutesToPort(hostname string, port uint32) map[string]*structpb.Value {
	route := structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"hostnames": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue(hostname)}}),
		"port":      structpb.NewNumberValue(float64(port)),
	}})
	return map[string]*structpb.Value{RouterName: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{route}})}
}

func checksumAlgorithm(value string) string {
	if value == "" {
		return ""
	}
	return "sha256"
}

func serial(actions ...*modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: actions}}}
}

func download(d *modelsv1.DownloadAction) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Download{Download: d}}
}
