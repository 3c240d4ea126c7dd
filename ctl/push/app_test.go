package push_test

import (
	"regexp"
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

func TestVersionCoversPackageStackMemoryAndDisk(t *testing.T) {
	base := push.Version("sha-a", "busybox", 64, 256)
	require.Len(t, base, 8)
	require.Equal(t, base, push.Version("sha-a", "busybox", 64, 256))
	for name, other := range map[string]string{
		"package":  push.Version("sha-b", "busybox", 64, 256),
		"stack":    push.Version("sha-a", "other", 64, 256),
		"memory":   push.Version("sha-a", "busybox", 128, 256),
		"disk":     push.Version("sha-a", "busybox", 64, 512),
		"boundary": push.Version("sha-", "abusybox", 64, 256),
	} {
		require.NotEqual(t, base, other, "a change of %s makes a new version", name)
	}
	app := push.App{Name: "hello", Stack: "busybox", MemoryMB: 64, DiskMB: 256, PackageSHA256: "sha-a", Instances: 1}
	same := app
	same.Instances = 5
	require.Equal(t, app.ProcessGUID(), same.ProcessGUID(), "instances are not part of the version")
	require.Equal(t, push.AppGUID("hello")+"-"+base, app.ProcessGUID())
	require.True(t, push.IsVersionOf(app.ProcessGUID(), app.GUID()))
	require.False(t, push.IsVersionOf(app.ProcessGUID(), push.AppGUID("other")))
	require.False(t, push.IsVersionOf(app.GUID()+"-extra", app.GUID()))
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
	good := push.App{Name: "hello", Stack: "busybox", Instances: 1, MemoryMB: 64, DiskMB: 256, Domain: "example.com"}
	require.NoError(t, good.Validate())
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
