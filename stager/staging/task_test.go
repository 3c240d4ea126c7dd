package staging_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/stager/staging"
)

// urls are fake fileserver URLs.
type urls struct{}

func (urls) BlobURL(key string) string    { return "http://fs/v1/blobs/" + key }
func (urls) StaticURL(path string) string { return "http://fs/v1/static/" + path }
func (urls) SignedUploadURL(key string, ttl time.Duration) string {
	return fmt.Sprintf("http://fs/v1/blobs/%s?ttl=%s", key, ttl)
}

func plan(skip bool) staging.Plan {
	req := validRequest()
	req.DropletKey = ""
	return staging.Plan{
		TaskGUID: "staging-app-1-0102", Request: req, Stack: staging.Stack{Name: "bookworm", RootFS: "preloaded:bookworm", User: "vcap"},
		Buildpacks: []staging.Buildpack{{Name: "nodejs", SHA256: sha, BlobKey: "buildpacks/bookworm/nodejs-01.zip"},
			{Name: "go", SHA256: strings.Repeat("f", 64), BlobKey: "buildpacks/bookworm/go-ff.tgz"}},
		SkipDetect: skip, LifecyclePath: "lifecycle/lifecycle.tgz", CallbackURL: "https://127.0.0.1:17021/",
		EgressRules: []*modelsv1.EgressRule{{Protocol: "tcp", Destinations: []string{"0.0.0.0/0"}, Ports: []uint32{443}}},
		MemoryMB:    1024, DiskMB: 4096, UploadTTL: time.Hour,
	}
}

func TestTaskDefinitionShape(t *testing.T) {
	p := plan(true)
	def := staging.TaskDefinition(p, urls{})
	if err := models.ValidateTaskDefinition(def); err != nil {
		t.Fatalf("the BBS would refuse it: %v", err)
	}
	if def.Rootfs != "preloaded:bookworm" || def.LogGuid != "app-1.v2_x" || def.LogSource != "STG" || def.ResultFile != "/tmp/result.json" ||
		def.MemoryMb != 1024 || def.DiskMb != 4096 || len(def.EgressRules) != 1 {
		t.Fatalf("definition %+v", def)
	}
	if def.CompletionCallbackUrl != "https://127.0.0.1:17021/v1/stagings/staging-app-1-0102/completed" {
		t.Errorf("callback %q", def.CompletionCallbackUrl)
	}
	var ann staging.Annotation
	if err := json.Unmarshal([]byte(def.Annotation), &ann); err != nil || ann.AppGUID != "app-1.v2_x" || ann.DropletKey != "droplets/app-1.v2_x/staging-app-1-0102.tgz" {
		t.Errorf("annotation %s (%v)", def.Annotation, err)
	}
	env := map[string]string{}
	var order []string
	for _, e := range def.Env {
		env[e.Name] = e.Value
		order = append(order, e.Name)
	}
	if fmt.Sprint(order) != "[CF_STACK MEMORY_LIMIT VCAP_APPLICATION VCAP_SERVICES FOO_1]" {
		t.Errorf("env order %v", order)
	}
	if env["CF_STACK"] != "bookworm" || env["MEMORY_LIMIT"] != "256m" || env["VCAP_SERVICES"] != "{}" {
		t.Errorf("env %v", env)
	}
	var vcap map[string]any
	if err := json.Unmarshal([]byte(env["VCAP_APPLICATION"]), &vcap); err != nil || vcap["application_id"] != "app-1.v2_x" ||
		vcap["name"] != "my app" || vcap["application_name"] != "my app" || fmt.Sprint(vcap["limits"]) != "map[disk:1024 mem:256]" {
		t.Errorf("VCAP_APPLICATION %s (%v)", env["VCAP_APPLICATION"], err)
	}

	steps := def.Action.GetSerial().GetActions()
	var shape []string
	for _, a := range steps {
		switch {
		case a.GetDownload() != nil:
			d := a.GetDownload()
			shape = append(shape, fmt.Sprintf("download %s -> %s as %s cache=%q sum=%s", d.From, d.To, d.User, d.CacheKey, d.ChecksumValue))
		case a.GetTry() != nil:
			d := a.GetTry().GetAction().GetDownload()
			shape = append(shape, fmt.Sprintf("try download %s -> %s as %s", d.From, d.To, d.User))
		case a.GetRun() != nil:
			r := a.GetRun()
			shape = append(shape, fmt.Sprintf("run %s %s as %s", r.Path, strings.Join(r.Args, " "), r.User))
		case a.GetUpload() != nil:
			u := a.GetUpload()
			shape = append(shape, fmt.Sprintf("upload %s -> %s as %s", u.From, u.To, u.User))
		}
	}
	want := []string{
		"download http://fs/v1/blobs/packages/abc.zip -> /tmp/app as vcap cache=\"\" sum=" + sha,
		"download http://fs/v1/static/lifecycle/lifecycle.tgz -> /tmp/lifecycle as root cache=\"lifecycle\" sum=",
		"download http://fs/v1/blobs/buildpacks/bookworm/nodejs-01.zip -> /tmp/buildpacks/nodejs as vcap cache=\"buildpack-" + sha + "\" sum=" + sha,
		"download http://fs/v1/blobs/buildpacks/bookworm/go-ff.tgz -> /tmp/buildpacks/go as vcap cache=\"buildpack-" + strings.Repeat("f", 64) + "\" sum=" + strings.Repeat("f", 64),
		"try download http://fs/v1/blobs/build-caches/app-1.v2_x/bookworm.tgz -> /tmp/cache as vcap",
		"run /tmp/lifecycle/builder -app /tmp/app -buildpacks /tmp/buildpacks -order nodejs,go -skip-detect -cache /tmp/cache -droplet /tmp/droplet.tgz -output-cache /tmp/output-cache.tgz -result /tmp/result.json as vcap",
		"upload /tmp/droplet.tgz -> http://fs/v1/blobs/droplets/app-1.v2_x/staging-app-1-0102.tgz?ttl=1h0m0s as vcap",
		"upload /tmp/output-cache.tgz -> http://fs/v1/blobs/build-caches/app-1.v2_x/bookworm.tgz?ttl=1h0m0s as vcap",
	}
	if strings.Join(shape, "\n") != strings.Join(want, "\n") {
		t.Errorf("actions:\n%s\nwant:\n%s", strings.Join(shape, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range steps {
		if d := a.GetDownload(); d != nil && d.ChecksumValue != "" && d.ChecksumAlgorithm != "sha256" {
			t.Errorf("download %s: checksum algorithm %q", d.From, d.ChecksumAlgorithm)
		}
	}
}

func TestTaskDefinitionDetectsWithoutSkipAndUsesTheRequestedDropletKey(t *testing.T) {
	p := plan(false)
	p.Request.DropletKey = "droplets/mine.tgz"
	p.Request.MemoryMb = 0
	def := staging.TaskDefinition(p, urls{})
	var run *modelsv1.RunAction
	for _, a := range def.Action.GetSerial().GetActions() {
		if a.GetRun() != nil {
			run = a.GetRun()
		}
	}
	if strings.Contains(strings.Join(run.Args, " "), "-skip-detect") {
		t.Errorf("args %v", run.Args)
	}
	if p.DropletKey() != "droplets/mine.tgz" || !strings.Contains(def.Annotation, "droplets/mine.tgz") {
		t.Errorf("droplet key %s", p.DropletKey())
	}
	for _, e := range def.Env {
		if e.Name == "MEMORY_LIMIT" && e.Value != "1024m" {
			t.Errorf("MEMORY_LIMIT without an app limit = %s, want the staging default", e.Value)
		}
	}
}
