package staging

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"drover.dev/lib/authz"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// Paths inside the staging container (the lifecycle builder's contract).
const (
	AppDir         = "/tmp/app"
	LifecycleDir   = "/tmp/lifecycle"
	BuildpacksDir  = "/tmp/buildpacks"
	CacheDir       = "/tmp/cache"
	DropletPath    = "/tmp/droplet.tgz"
	OutputCache    = "/tmp/output-cache.tgz"
	ResultFile     = "/tmp/result.json"
	BuilderPath    = LifecycleDir + "/builder"
	LogSource      = "STG"
	CallbackPrefix = "/v1/stagings/"
	CallbackSuffix = "/completed"
	// Domain is the staging tasks' BBS domain.
	Domain = authz.StagingDomain
)

// Stack is a root filesystem apps are staged for and run on.
type Stack struct {
	Name   string `json:"name"`
	RootFS string `json:"rootfs"`
	User   string `json:"user"`
}

// URLs are the fileserver addresses a staging task uses.
type URLs interface {
	// BlobURL is the download URL of a blob.
	BlobURL(key string) string
	// StaticURL is the download URL of a file of the static directory.
	StaticURL(path string) string
	// SignedUploadURL is an upload URL for a blob, valid for ttl.
	SignedUploadURL(key string, ttl time.Duration) string
}

// Plan is everything a staging task is made of.
type Plan struct {
	TaskGUID   string
	Request    *stagerv1.StageRequest
	Stack      Stack
	Buildpacks []Buildpack
	SkipDetect bool
	// LifecyclePath is the lifecycle bundle's static path.
	LifecyclePath string
	// CallbackURL is the base URL of the stager's callback listener.
	CallbackURL string
	EgressRules []*modelsv1.EgressRule
	// MemoryMB and DiskMB are the staging task's limits; AppMemoryMB and AppDiskMB the
	// app's (MEMORY_LIMIT, VCAP_APPLICATION): the request's, or these when it has none.
	MemoryMB, DiskMB int32
	// UploadTTL is how long the signed upload URLs are valid.
	UploadTTL time.Duration
}

// DropletKey is the request's droplet key or droplets/APP_GUID/TASK_GUID.tgz.
func (p Plan) DropletKey() string {
	if k := p.Request.GetDropletKey(); k != "" {
		return k
	}
	return "droplets/" + p.Request.GetAppGuid() + "/" + p.TaskGUID + ".tgz"
}

// BuildCacheKey is the app's build cache blob of the stack.
func BuildCacheKey(appGUID, stack string) string {
	return "build-caches/" + appGUID + "/" + stack + ".tgz"
}

// CallbackURLFor is the completion callback URL of a task.
func CallbackURLFor(base, taskGUID string) string {
	return strings.TrimRight(base, "/") + CallbackPrefix + taskGUID + CallbackSuffix
}

// appLimits are the app's memory and disk in MB.
func (p Plan) appLimits() (mem, disk int32) {
	mem, disk = p.Request.GetMemoryMb(), p.Request.GetDiskMb()
	if mem == 0 {
		mem = p.MemoryMB
	}
	if disk == 0 {
		disk = p.DiskMB
	}
	return mem, disk
}

// vcapApplication is the VCAP_APPLICATION a staging sees.
type vcapApplication struct {
	ApplicationID   string     `json:"application_id"`
	ApplicationName string     `json:"application_name"`
	Name            string     `json:"name"`
	Limits          vcapLimits `json:"limits"`
}

type vcapLimits struct {
	Mem  int32 `json:"mem"`
	Disk int32 `json:"disk"`
}

// Annotation is the staging task's annotation.
type Annotation struct {
	AppGUID    string `json:"app_guid"`
	AppName    string `json:"app_name"`
	DropletKey string `json:"droplet_key"`
	Stack      string `json:"stack"`
}

// Env is the staging environment: CF_STACK, MEMORY_LIMIT, VCAP_APPLICATION,
// VCAP_SERVICES, then the user's.
func (p Plan) Env() []*modelsv1.EnvironmentVariable {
	mem, disk := p.appLimits()
	vcap, _ := json.Marshal(vcapApplication{ // cannot fail
		ApplicationID: p.Request.GetAppGuid(), ApplicationName: p.Request.GetAppName(), Name: p.Request.GetAppName(),
		Limits: vcapLimits{Mem: mem, Disk: disk},
	})
	env := []*modelsv1.EnvironmentVariable{
		{Name: "CF_STACK", Value: p.Stack.Name},
		{Name: "MEMORY_LIMIT", Value: fmt.Sprintf("%dm", mem)},
		{Name: "VCAP_APPLICATION", Value: string(vcap)},
		{Name: "VCAP_SERVICES", Value: "{}"},
	}
	for _, e := range p.Request.GetEnv() {
		env = append(env, &modelsv1.EnvironmentVariable{Name: e.GetName(), Value: e.GetValue()})
	}
	return env
}

// BuilderArgs are the lifecycle builder's flags.
func (p Plan) BuilderArgs() []string {
	args := []string{"-app", AppDir, "-buildpacks", BuildpacksDir, "-order", strings.Join(Names(p.Buildpacks), ",")}
	if p.SkipDetect {
		args = append(args, "-skip-detect")
	}
	return append(args, "-cache", CacheDir, "-droplet", DropletPath, "-output-cache", OutputCache, "-result", ResultFile)
}

// TaskDefinition is the staging task: download the package, the lifecycle, the
// buildpacks and (trying) the build cache, run the builder, upload the droplet and the
// new build cache. Its result is the builder's result.json; completion is posted to
// the stager's callback listener.
func TaskDefinition(p Plan, urls URLs) *modelsv1.TaskDefinition {
	req := p.Request
	user := p.Stack.User
	annotation, _ := json.Marshal(Annotation{AppGUID: req.GetAppGuid(), AppName: req.GetAppName(), DropletKey: p.DropletKey(), Stack: p.Stack.Name}) // cannot fail
	cacheKey := BuildCacheKey(req.GetAppGuid(), p.Stack.Name)
	actions := []*modelsv1.Action{
		download(&modelsv1.DownloadAction{Artifact: "app package", From: urls.BlobURL(req.GetPackageKey()), To: AppDir, User: user,
			ChecksumAlgorithm: "sha256", ChecksumValue: req.GetPackageSha256()}),
		download(&modelsv1.DownloadAction{Artifact: "lifecycle", From: urls.StaticURL(p.LifecyclePath), To: LifecycleDir,
			CacheKey: "lifecycle", User: "root"}),
	}
	for _, b := range p.Buildpacks {
		actions = append(actions, download(&modelsv1.DownloadAction{Artifact: "buildpack " + b.Name, From: urls.BlobURL(b.BlobKey),
			To: BuildpacksDir + "/" + b.Name, CacheKey: "buildpack-" + b.SHA256, User: user, ChecksumAlgorithm: "sha256", ChecksumValue: b.SHA256}))
	}
	actions = append(actions,
		&modelsv1.Action{Action: &modelsv1.Action_Try{Try: &modelsv1.TryAction{Action: download(&modelsv1.DownloadAction{
			Artifact: "build cache", From: urls.BlobURL(cacheKey), To: CacheDir, User: user})}}},
		&modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: BuilderPath, Args: p.BuilderArgs(), User: user}}},
		&modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{Artifact: "droplet", From: DropletPath,
			To: urls.SignedUploadURL(p.DropletKey(), p.UploadTTL), User: user}}},
		&modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{Artifact: "build cache", From: OutputCache,
			To: urls.SignedUploadURL(cacheKey, p.UploadTTL), User: user}}},
	)
	return &modelsv1.TaskDefinition{
		Rootfs:                p.Stack.RootFS,
		Env:                   p.Env(),
		Action:                &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: actions}}},
		MemoryMb:              p.MemoryMB,
		DiskMb:                p.DiskMB,
		LogGuid:               req.GetAppGuid(),
		LogSource:             LogSource,
		ResultFile:            ResultFile,
		CompletionCallbackUrl: CallbackURLFor(p.CallbackURL, p.TaskGUID),
		Annotation:            string(annotation),
		EgressRules:           p.EgressRules,
	}
}

func download(d *modelsv1.DownloadAction) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Download{Download: d}}
}
