package push_test

import (
	"crypto/sha1" //nolint:gosec // UUIDv5 is defined with SHA-1
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/push"
)

func TestAppGUIDIsStableAndUUIDShaped(t *testing.T) {
	a := push.AppGUID("hello")
	require.Equal(t, a, push.AppGUID("hello"), "same name, same guid")
	require.NotEqual(t, a, push.AppGUID("hello2"))
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`), a)
}

// TestAppGUIDNeverChanges pins app guids: a changed guid would orphan every pushed app.
// The table holds what the first (hand-built UUIDv5) implementation returned, and
// handBuiltAppGUID is that implementation, compared over more names.
func TestAppGUIDNeverChanges(t *testing.T) {
	for name, want := range map[string]string{
		"hello":       "20127174-1f75-5f3b-900b-10e2cb658a91",
		"":            "adc87f52-db41-5f13-814f-d633d9b9a78d",
		"my-app":      "5e80d73f-6a57-5de0-ad5c-3aea8f16214e",
		"Ünïcødé app": "3611af93-3454-5865-a119-93af265d4e9f",
		"a/b:c":       "8fe71c5c-7885-55f0-943e-9d008b391b0f",
		"x":           "e412ac76-450c-55d9-aaeb-49fe1ad92035",
	} {
		require.Equal(t, want, push.AppGUID(name), "app %q", name)
	}
	for i := range 500 {
		name := strings.Repeat(fmt.Sprintf("app-%d-", i), 1+i%7)
		require.Equal(t, handBuiltAppGUID(name), push.AppGUID(name), "app %q", name)
	}
}

// handBuiltAppGUID is the first AppGUID: SHA-1 over namespace and name, version and
// variant bits set by hand (RFC 4122 §4.3).
func handBuiltAppGUID(name string) string {
	namespace := []byte{0x5b, 0x2e, 0x9c, 0x71, 0x0d, 0x4a, 0x4f, 0x3b, 0x8e, 0x16, 0xa7, 0x42, 0xc9, 0x03, 0x6d, 0xf1}
	h := sha1.New() //nolint:gosec // UUIDv5 is defined with SHA-1
	h.Write(namespace)
	h.Write([]byte(name))
	u := h.Sum(nil)[:16]
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func TestVersionCoversPackageStackMemoryDiskBuildpacksAndEnv(t *testing.T) {
	v := func(sha, stack string, mem, disk int32, bps []string, env ...push.EnvVar) string {
		return push.Version(sha, stack, mem, disk, bps, env)
	}
	base := v("sha-a", "busybox", 64, 256, nil)
	require.Len(t, base, 8)
	require.Equal(t, base, v("sha-a", "busybox", 64, 256, nil))
	require.Equal(t, "e7b8b72b", base, "without buildpacks and env, the version earlier drovers computed")
	withBoth := v("sha-a", "busybox", 64, 256, []string{"nodejs", "go"}, push.EnvVar{Name: "A", Value: "1"}, push.EnvVar{Name: "B", Value: "2"})
	require.Equal(t, withBoth, v("sha-a", "busybox", 64, 256, []string{"nodejs", "go"}, push.EnvVar{Name: "B", Value: "2"}, push.EnvVar{Name: "A", Value: "1"}),
		"env is sorted by name")
	for name, other := range map[string]string{
		"package":     v("sha-b", "busybox", 64, 256, nil),
		"stack":       v("sha-a", "other", 64, 256, nil),
		"memory":      v("sha-a", "busybox", 128, 256, nil),
		"disk":        v("sha-a", "busybox", 64, 512, nil),
		"boundary":    v("sha-", "abusybox", 64, 256, nil),
		"a buildpack": v("sha-a", "busybox", 64, 256, []string{"go"}),
		"an env var":  v("sha-a", "busybox", 64, 256, nil, push.EnvVar{Name: "A", Value: "1"}),
	} {
		require.NotEqual(t, base, other, "a change of %s makes a new version", name)
	}
	a1, b2 := push.EnvVar{Name: "A", Value: "1"}, push.EnvVar{Name: "B", Value: "2"}
	for name, other := range map[string]string{
		"buildpack order":   v("sha-a", "busybox", 64, 256, []string{"go", "nodejs"}, a1, b2),
		"buildpack split":   v("sha-a", "busybox", 64, 256, []string{"nodejsgo"}, a1, b2),
		"no buildpacks":     v("sha-a", "busybox", 64, 256, nil, a1, b2),
		"an env value":      v("sha-a", "busybox", 64, 256, []string{"nodejs", "go"}, a1, push.EnvVar{Name: "B", Value: "3"}),
		"env name boundary": v("sha-a", "busybox", 64, 256, []string{"nodejs", "go"}, a1, push.EnvVar{Name: "B2"}),
		"one env var less":  v("sha-a", "busybox", 64, 256, []string{"nodejs", "go"}, a1),
	} {
		require.NotEqual(t, withBoth, other, "a change of %s makes a new version", name)
	}
	app := push.App{Name: "hello", Stack: "busybox", MemoryMB: 64, DiskMB: 256, PackageSHA256: "sha-a", Instances: 1}
	same := app
	same.Instances = 5
	require.Equal(t, app.ProcessGUID(), same.ProcessGUID(), "instances are not part of the version")
	require.Equal(t, push.AppGUID("hello")+"-"+base, app.ProcessGUID())
	withEnv := app
	withEnv.Env = []push.EnvVar{{Name: "A", Value: "1"}}
	require.NotEqual(t, app.ProcessGUID(), withEnv.ProcessGUID(), "App.Version covers env")
	withBP := app
	withBP.Buildpacks = []string{"go"}
	require.NotEqual(t, app.ProcessGUID(), withBP.ProcessGUID(), "App.Version covers buildpacks")
	require.True(t, push.IsVersionOf(app.ProcessGUID(), app.GUID()))
	require.False(t, push.IsVersionOf(app.ProcessGUID(), push.AppGUID("other")))
	require.False(t, push.IsVersionOf(app.GUID()+"-extra", app.GUID()))
}

func TestParseEnv(t *testing.T) {
	env, err := push.ParseEnv([]string{"A=1", "B=", "C=x=y"})
	require.NoError(t, err)
	require.Equal(t, []push.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}, {Name: "C", Value: "x=y"}}, env)
	_, err = push.ParseEnv([]string{"NOEQUALS", "A=1", "ALSO"})
	require.EqualError(t, err, `-e/--env "NOEQUALS" must be NAME=VALUE; -e/--env "ALSO" must be NAME=VALUE`)
}

func TestCheckBuildpackName(t *testing.T) {
	require.NoError(t, push.CheckBuildpackName("node_js-2.x"))
	for _, bad := range []string{"", "Node", "a/b", strings.Repeat("a", 65)} {
		require.ErrorContains(t, push.CheckBuildpackName(bad), "must be 1 to 64 lower-case letters", bad)
	}
}

func TestParseMegabytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int32
		wantErr string
	}{
		{in: "128", want: 128},
		{in: "64M", want: 64},
		{in: "64m", want: 64},
		{in: "64MB", want: 64},
		{in: "1G", want: 1024},
		{in: "2gb", want: 2048},
		{in: " 256M ", want: 256},
		{in: "0", wantErr: "not a positive size"},
		{in: "-5M", wantErr: "not a positive size"},
		{in: "1.5G", wantErr: "not a positive size"},
		{in: "64K", wantErr: "not a positive size"},
		{in: "B", wantErr: "not a positive size"},
		{in: "", wantErr: "not a positive size"},
		{in: "3000000G", wantErr: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := push.ParseMegabytes(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAppValidate(t *testing.T) {
	good := push.App{Name: "hello", Stack: "busybox", Instances: 1, MemoryMB: 64, DiskMB: 256, Domain: "example.com",
		Buildpacks: make([]string, 16), Env: manyEnv(100)}
	for i := range good.Buildpacks {
		good.Buildpacks[i] = fmt.Sprintf("bp-%d", i)
	}
	require.NoError(t, good.Validate())
	noStack := good
	noStack.Stack = ""
	require.NoError(t, noStack.Validate(), "no stack: the stager's default")
	tests := []struct {
		name    string
		change  func(*push.App)
		wantErr string
	}{
		{"upper-case name", func(a *push.App) { a.Name = "Hello" }, "--name"},
		{"name with a dot", func(a *push.App) { a.Name = "a.b" }, "--name"},
		{"empty name", func(a *push.App) { a.Name = "" }, "--name"},
		{"stack with a slash", func(a *push.App) { a.Stack = "a/b" }, "--stack"},
		{"negative instances", func(a *push.App) { a.Instances = -1 }, "--instances"},
		{"no memory", func(a *push.App) { a.MemoryMB = 0 }, "--memory"},
		{"no disk", func(a *push.App) { a.DiskMB = 0 }, "--disk"},
		{"bad domain", func(a *push.App) { a.Domain = "exa mple.com" }, "--domain"},
		{"empty domain", func(a *push.App) { a.Domain = "" }, "--domain"},
		{"upper-case buildpack", func(a *push.App) { a.Buildpacks = []string{"ok", "NodeJS"} }, `-b/--buildpack "NodeJS" must be 1 to 64`},
		{"empty buildpack", func(a *push.App) { a.Buildpacks = []string{""} }, `-b/--buildpack "" must be`},
		{"long buildpack", func(a *push.App) { a.Buildpacks = []string{strings.Repeat("b", 65)} }, "-b/--buildpack"},
		{"buildpack with a slash", func(a *push.App) { a.Buildpacks = []string{"a/b"} }, "-b/--buildpack"},
		{"too many buildpacks", func(a *push.App) { a.Buildpacks = make([]string, 17) }, "-b/--buildpack is given 17 times: at most 16"},
		{"env name with a dash", func(a *push.App) { a.Env = []push.EnvVar{{Name: "MY-VAR"}} }, `-e/--env name "MY-VAR" must be a letter or '_'`},
		{"env name starting with a digit", func(a *push.App) { a.Env = []push.EnvVar{{Name: "1A"}} }, `-e/--env name "1A"`},
		{"empty env name", func(a *push.App) { a.Env = []push.EnvVar{{Name: "", Value: "x"}} }, `-e/--env name ""`},
		{"env PORT", func(a *push.App) { a.Env = []push.EnvVar{{Name: "PORT", Value: "1"}} }, "-e/--env PORT is set by drover"},
		{"env VCAP_", func(a *push.App) { a.Env = []push.EnvVar{{Name: "VCAP_SERVICES", Value: "{}"}} }, "-e/--env VCAP_SERVICES is set by drover"},
		{"env twice", func(a *push.App) { a.Env = []push.EnvVar{{Name: "A"}, {Name: "A"}} }, "-e/--env A is given twice"},
		{"too many env", func(a *push.App) { a.Env = manyEnv(101) }, "-e/--env is given 101 times: at most 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := good
			tt.change(&app)
			require.ErrorContains(t, app.Validate(), tt.wantErr)
		})
	}
}

func TestSizes(t *testing.T) {
	all := []push.Resource{{Path: "a", SHA1: "1", Size: 10}, {Path: "b", SHA1: "2", Size: 20}, {Path: "c", SHA1: "2", Size: 21}}
	missing := push.Missing(all, []push.Resource{{SHA1: "2", Size: 20}})
	require.Equal(t, []push.Resource{all[0], all[2]}, missing, "a file is known by sha1 and size")
	require.Equal(t, int64(31), push.TotalSize(missing))
	for in, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0K", 1229: "1.2K", 5 << 20: "5.0M", 3 << 30: "3.0G"} {
		require.Equal(t, want, push.HumanBytes(in))
	}
}

func manyEnv(n int) []push.EnvVar {
	env := make([]push.EnvVar, n)
	for i := range env {
		env[i] = push.EnvVar{Name: fmt.Sprintf("VAR_%d", i), Value: "x"}
	}
	return env
}

func TestAppValidateNamesEveryBadFlag(t *testing.T) {
	app := push.App{Name: "Bad", Stack: "busybox", Instances: 1, MemoryMB: 0, DiskMB: 256, Domain: "example.com",
		Buildpacks: []string{"X"}, Env: []push.EnvVar{{Name: "PORT"}}}
	err := app.Validate()
	for _, flag := range []string{"--name", "--memory", "-b/--buildpack", "-e/--env PORT"} {
		require.ErrorContains(t, err, flag)
	}
}
