package push

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Paths inside the staging container and the app container (common6.md).
const (
	stagingAppDir     = "/tmp/app"
	stagingBuilderDir = "/tmp/builder"
	stagingDroplet    = "/tmp/droplet.tgz"
	stagingResultFile = "/tmp/result.json"
	appHome           = "/home/vcap"
	// AppPort is the port apps listen on ($PORT), checked and routed.
	AppPort = 8080
	// RouterName is the routes key the route-emitter reads.
	RouterName = "cf-router"
	// StagingLogSource tags the staging task's log lines.
	StagingLogSource = "STG"
	// AppLogSource tags the app's log lines.
	AppLogSource = "APP/PROC/WEB"
	// DropletUploadTTL is how long the staging task's signed droplet URL is valid.
	DropletUploadTTL = 30 * time.Minute
	stagingMemoryMB  = 256
	stagingDiskMB    = 1024
	lrpStartTimeout  = 60
)

// URLs are the fileserver addresses a definition points at.
type URLs interface {
	// BlobURL is the download URL of a blob.
	BlobURL(key string) string
	// StaticURL is the download URL of a static file (a builder bundle).
	StaticURL(path string) string
	// SignedUploadURL is an upload URL for a blob, valid for ttl.
	SignedUploadURL(key string, ttl time.Duration) string
}

// StagingTaskGUID is "staging-<version>-<6 random hex>" (random from r).
func StagingTaskGUID(app App, r io.Reader) (string, error) {
	b := make([]byte, 3)
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("staging task guid: %w", err)
	}
	return "staging-" + app.Version() + "-" + hex.EncodeToString(b), nil
}

// stagingAnnotation is the staging task's annotation.
type stagingAnnotation struct {
	AppName string `json:"app_name"`
	AppGUID string `json:"app_guid"`
	Version string `json:"version"`
}

// StagingTask is the task that turns the app's package into a droplet: it downloads
// the package and the stack's builder, runs the builder, uploads the droplet to a
// signed URL and returns the staging result through its result file.
func StagingTask(app App, urls URLs) *modelsv1.TaskDefinition {
	annotation, _ := json.Marshal(stagingAnnotation{AppName: app.Name, AppGUID: app.GUID(), Version: app.Version()}) // cannot fail
	return &modelsv1.TaskDefinition{
		Rootfs:     app.RootFS(),
		MemoryMb:   stagingMemoryMB,
		DiskMb:     stagingDiskMB,
		LogGuid:    app.GUID(),
		LogSource:  StagingLogSource,
		ResultFile: stagingResultFile,
		Annotation: string(annotation),
		Action: serial(
			download(&modelsv1.DownloadAction{
				Artifact: "app package", From: urls.BlobURL(app.PackageKey), To: stagingAppDir, User: "root",
				ChecksumAlgorithm: checksumAlgorithm(app.PackageSHA256), ChecksumValue: app.PackageSHA256,
			}),
			download(&modelsv1.DownloadAction{
				Artifact: "builder", From: urls.StaticURL(app.Stack + "/builder.tgz"), To: stagingBuilderDir,
				CacheKey: "builder-" + app.Stack, User: "root",
			}),
			&modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
				Path: stagingBuilderDir + "/builder",
				Args: []string{stagingAppDir, stagingDroplet, stagingResultFile},
				User: "root",
			}}},
			&modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{
				Artifact: "droplet", From: stagingDroplet, To: urls.SignedUploadURL(app.DropletKey(), DropletUploadTTL), User: "root",
			}}},
		),
	}
}

// StagingResult is what the builder writes to its result file.
type StagingResult struct {
	LifecycleType string            `json:"lifecycle_type"`
	DetectedType  string            `json:"detected_type"`
	StartCommand  string            `json:"start_command"`
	ProcessTypes  map[string]string `json:"process_types,omitempty"`
}

// ParseStagingResult reads a staging task's result. The web process type wins over
// start_command; one of them must be set.
func ParseStagingResult(result string) (StagingResult, error) {
	var r StagingResult
	if err := json.Unmarshal([]byte(result), &r); err != nil {
		return StagingResult{}, fmt.Errorf("staging result is not JSON: %v", err)
	}
	if web := r.ProcessTypes["web"]; web != "" {
		r.StartCommand = web
	}
	if strings.TrimSpace(r.StartCommand) == "" {
		return StagingResult{}, fmt.Errorf("staging result has no start_command")
	}
	return r, nil
}

// LRPAnnotation is the JSON annotation of an app's LRP.
type LRPAnnotation struct {
	AppName       string `json:"app_name"`
	AppGUID       string `json:"app_guid"`
	Version       string `json:"version"`
	PackageSHA256 string `json:"package_sha256"`
	DropletKey    string `json:"droplet_key"`
	// DockerImage is the pinned image (docker://HOST/REPO@sha256:...) of a docker push;
	// docker apps have no package and no droplet.
	DockerImage string `json:"docker_image,omitempty"`
	// PushedAt is when the push that desired the LRP ran (RFC 3339, UTC); a restart
	// keeps it.
	PushedAt string `json:"pushed_at,omitempty"`
}

// Droplet is a staged droplet blob.
type Droplet struct {
	URL    string
	SHA256 string // empty when unknown
}

// DesiredLRP runs the droplet: setup downloads it into /home/vcap, the action runs the
// start command in /home/vcap/app with PORT=8080, a TCP check on 8080 tells when an
// instance is up, and the cf-router route sends Name.Domain to port 8080.
func DesiredLRP(app App, staged StagingResult, droplet Droplet) *modelsv1.DesiredLRP {
	pg := app.ProcessGUID()
	annotation, _ := json.Marshal(LRPAnnotation{ // cannot fail
		AppName: app.Name, AppGUID: app.GUID(), Version: app.Version(),
		PackageSHA256: app.PackageSHA256, DropletKey: app.DropletKey(),
	})
	port := &modelsv1.EnvironmentVariable{Name: "PORT", Value: fmt.Sprint(AppPort)}
	return &modelsv1.DesiredLRP{
		ProcessGuid: pg,
		Domain:      AppsDomain,
		Instances:   app.Instances,
		Rootfs:      app.RootFS(),
		MemoryMb:    app.MemoryMB,
		DiskMb:      app.DiskMB,
		Env:         []*modelsv1.EnvironmentVariable{port},
		Setup: download(&modelsv1.DownloadAction{
			Artifact: "droplet", From: droplet.URL, To: appHome, CacheKey: "droplet-" + pg, User: "root",
			ChecksumAlgorithm: checksumAlgorithm(droplet.SHA256), ChecksumValue: droplet.SHA256,
		}),
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path: "/bin/sh",
			Args: []string{"-c", "cd " + appHome + "/app && " + staged.StartCommand},
			User: "root",
			Env:  []*modelsv1.EnvironmentVariable{port},
		}}},
		Ports:           []uint32{AppPort},
		CheckDefinition: &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: AppPort}}}},
		StartTimeout:    lrpStartTimeout,
		Routes:          Routes(app.Hostname()),
		LogGuid:         app.GUID(),
		Annotation:      string(annotation),
	}
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
