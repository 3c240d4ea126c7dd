package staging_test

import (
	"strings"
	"testing"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/staging"
)

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func validRequest() *stagerv1.StageRequest {
	return &stagerv1.StageRequest{AppGuid: "app-1.v2_x", AppName: "my app", PackageKey: "packages/abc.zip", PackageSha256: sha,
		Stack: "bookworm", Buildpacks: []string{"nodejs", "go"}, Env: []*modelsv1.EnvironmentVariable{{Name: "FOO_1", Value: "bar"}},
		MemoryMb: 256, DiskMb: 1024, DropletKey: "droplets/app/x.tgz"}
}

func TestValidate(t *testing.T) {
	manyEnv := make([]*modelsv1.EnvironmentVariable, staging.MaxEnv+1)
	for i := range manyEnv {
		manyEnv[i] = &modelsv1.EnvironmentVariable{Name: "V", Value: "x"}
	}
	cases := []struct {
		name  string
		edit  func(r *stagerv1.StageRequest)
		wants []string
	}{
		{"valid", func(*stagerv1.StageRequest) {}, nil},
		{"valid minimal", func(r *stagerv1.StageRequest) {
			r.Stack, r.Buildpacks, r.Env, r.MemoryMb, r.DiskMb, r.DropletKey, r.AppName = "", nil, nil, 0, 0, "", ""
		}, nil},
		{"app guid missing", func(r *stagerv1.StageRequest) { r.AppGuid = "" }, []string{"app_guid: is required"}},
		{"app guid too long", func(r *stagerv1.StageRequest) { r.AppGuid = strings.Repeat("a", 129) }, []string{"app_guid: must be at most 128 bytes"}},
		{"app guid bad characters", func(r *stagerv1.StageRequest) { r.AppGuid = "a/b" }, []string{"app_guid: must match"}},
		{"app guid dots", func(r *stagerv1.StageRequest) { r.AppGuid = ".." }, []string{`app_guid: must not be ".."`}},
		{"app name too long", func(r *stagerv1.StageRequest) { r.AppName = strings.Repeat("n", 256) }, []string{"app_name: must be at most 255 bytes"}},
		{"package key missing", func(r *stagerv1.StageRequest) { r.PackageKey = "" }, []string{"package_key: is required"}},
		{"package key too long", func(r *stagerv1.StageRequest) { r.PackageKey = strings.Repeat("k", 1025) }, []string{"package_key: must be at most 1024 bytes"}},
		{"package key escapes", func(r *stagerv1.StageRequest) { r.PackageKey = "packages/../x" }, []string{"package_key: blob key"}},
		{"package sha short", func(r *stagerv1.StageRequest) { r.PackageSha256 = "abc" }, []string{"package_sha256: must be 64 lowercase hex digits"}},
		{"package sha upper", func(r *stagerv1.StageRequest) { r.PackageSha256 = strings.ToUpper(sha) }, []string{"package_sha256"}},
		{"stack too long", func(r *stagerv1.StageRequest) { r.Stack = strings.Repeat("s", 65) }, []string{"stack: must be at most 64"}},
		{"stack bad characters", func(r *stagerv1.StageRequest) { r.Stack = "Book worm" }, []string{"stack: must be at most 64"}},
		{"too many buildpacks", func(r *stagerv1.StageRequest) { r.Buildpacks = strings.Split(strings.Repeat("b,", 16)+"b", ",") }, []string{"buildpacks: at most 16 buildpacks, got 17"}},
		{"bad buildpack name", func(r *stagerv1.StageRequest) { r.Buildpacks = []string{"ok", "Bad/Name"} }, []string{`buildpacks[1]: must match`}},
		{"buildpack name too long", func(r *stagerv1.StageRequest) { r.Buildpacks = []string{strings.Repeat("b", 65)} }, []string{`buildpacks[0]: must match`}},
		{"buildpack named twice", func(r *stagerv1.StageRequest) { r.Buildpacks = []string{"go", "go"} }, []string{`buildpacks[1]: "go" is named twice`}},
		{"too many env", func(r *stagerv1.StageRequest) { r.Env = manyEnv }, []string{"env: at most 100 variables, got 101"}},
		{"bad env name", func(r *stagerv1.StageRequest) {
			r.Env = []*modelsv1.EnvironmentVariable{{Name: "1X", Value: ""}, {Name: "A-B"}}
		}, []string{"env[0].name: must match", "env[1].name: must match"}},
		{"env value too long", func(r *stagerv1.StageRequest) {
			r.Env = []*modelsv1.EnvironmentVariable{{Name: "X", Value: strings.Repeat("v", 32<<10+1)}}
		}, []string{"env[0].value: must be at most 32768 bytes"}},
		{"memory negative", func(r *stagerv1.StageRequest) { r.MemoryMb = -1 }, []string{"memory_mb: must be between 0 and 65536, got -1"}},
		{"memory too large", func(r *stagerv1.StageRequest) { r.MemoryMb = 65537 }, []string{"memory_mb: must be between 0 and 65536"}},
		{"disk too large", func(r *stagerv1.StageRequest) { r.DiskMb = 65537 }, []string{"disk_mb: must be between 0 and 65536"}},
		{"droplet key bad", func(r *stagerv1.StageRequest) { r.DropletKey = "droplets//x" }, []string{"droplet_key: blob key"}},
		{"every bad field at once", func(r *stagerv1.StageRequest) {
			r.AppGuid, r.PackageKey, r.PackageSha256, r.MemoryMb = "", "", "", -5
		}, []string{"app_guid:", "package_key:", "package_sha256:", "memory_mb:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := validRequest()
			tc.edit(r)
			err := staging.Validate(r)
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if err := staging.Validate(nil); err == nil {
		t.Error("nil request accepted")
	}
}

func TestTaskGUID(t *testing.T) {
	random := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	cases := []struct{ app, want string }{
		{"app-1", "staging-app-1-0102030405060708"},
		{"my.app_v2", "staging-my-app_v2-0102030405060708"},
		{strings.Repeat("x", 128), "staging-" + strings.Repeat("x", 40) + "-0102030405060708"},
	}
	for _, tc := range cases {
		got := staging.TaskGUID(tc.app, random)
		if got != tc.want {
			t.Errorf("TaskGUID(%q) = %q, want %q", tc.app, got, tc.want)
		}
		if len(got) > 128 || strings.Trim(got, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("TaskGUID(%q) = %q is not a valid BBS task guid", tc.app, got)
		}
	}
	if staging.TaskGUID("a", []byte{1}) == staging.TaskGUID("a", []byte{2}) {
		t.Error("random does not change the guid")
	}
}
