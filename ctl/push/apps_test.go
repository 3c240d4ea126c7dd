package push_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/push"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestSplitProcessGUID(t *testing.T) {
	app := push.AppGUID("hello")
	for _, tc := range []struct {
		guid    string
		ok      bool
		version string
	}{
		{app + "-0a1b2c3d", true, "0a1b2c3d"},
		{app + "-0A1B2C3D", false, ""},
		{app + "-0a1b2c3", false, ""},
		{app + "-0a1b2c3d9", false, ""},
		{"my-app", false, ""},
		{"hello-0a1b2c3d", false, ""},
		{"", false, ""},
		{"5B2E9C71-0D4A-4F3B-8E16-A742C9036DF1-0a1b2c3d", false, ""},
	} {
		gotApp, version, ok := push.SplitProcessGUID(tc.guid)
		require.Equal(t, tc.ok, ok, tc.guid)
		if ok {
			require.Equal(t, app, gotApp)
			require.Equal(t, tc.version, version)
		}
	}
}

func appLRP(name, version, annotation string, createdAt int64) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid: push.ProcessGUID(push.AppGUID(name), version), Domain: push.AppsDomain, Instances: 2,
		Annotation: annotation, CreatedAt: createdAt, Routes: push.Routes(name + ".example.com"),
	}
}

func TestAppsGroupsVersionsNewestFirst(t *testing.T) {
	pushed := func(name, at string) string {
		return `{"app_name":"` + name + `","version":"x","pushed_at":"` + at + `"}`
	}
	lrps := []*modelsv1.DesiredLRP{
		appLRP("web", "00000001", pushed("web", "2026-11-22T10:00:00Z"), 5),
		appLRP("web", "00000002", pushed("web", "2026-11-22T11:00:00Z"), 1),
		appLRP("web", "00000003", pushed("web", "2026-11-22T11:00:00Z"), 9), // a restart of 2
		appLRP("api", "0000000a", "not json", time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).UnixNano()),
		appLRP("liar", "0000000b", `{"app_name":"someone-else"}`, 0),
		{ProcessGuid: "my-app", Domain: push.AppsDomain},
	}
	apps := push.Apps(lrps)
	require.Len(t, apps, 3, "an LRP that is no app version is left out")

	// Unnamed apps sort first (by guid), then by name.
	var names []string
	for _, a := range apps {
		names = append(names, a.Name)
	}
	require.Contains(t, names, "web")
	require.Contains(t, names, "")

	web, ok := push.FindApp(lrps, "web")
	require.True(t, ok)
	require.Equal(t, push.AppGUID("web"), web.GUID)
	require.Equal(t, []string{
		push.ProcessGUID(web.GUID, "00000003"), push.ProcessGUID(web.GUID, "00000002"), push.ProcessGUID(web.GUID, "00000001"),
	}, web.ProcessGUIDs(), "newest push first; a restart (same push time) by creation")
	require.Equal(t, time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC), web.Current().PushedAt())
	require.Equal(t, []string{"web.example.com"}, push.Hostnames(web.Current().LRP))

	api, ok := push.FindApp(lrps, "api")
	require.True(t, ok)
	require.Equal(t, "api", api.Name, "the name asked for names an app without annotation")
	require.Equal(t, time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), api.Current().PushedAt().UTC(), "creation time without a stamp")

	liar, ok := push.FindApp(lrps, "liar")
	require.True(t, ok)
	require.Empty(t, liar.Versions[0].Name(), "an annotation naming another app is not believed")

	_, ok = push.FindApp(lrps, "nobody")
	require.False(t, ok)
}

func TestCurrentVersion(t *testing.T) {
	a := appLRP("web", "00000001", `{"pushed_at":"2026-11-22T10:00:00Z"}`, 0)
	b := appLRP("web", "00000002", `{"pushed_at":"2026-11-22T11:00:00Z"}`, 0)
	other := appLRP("api", "00000003", `{"pushed_at":"2026-11-22T12:00:00Z"}`, 0)
	lrps := []*modelsv1.DesiredLRP{a, b, other}
	app := push.AppGUID("web")
	require.Equal(t, a, push.CurrentVersion(lrps, app, a.GetProcessGuid()), "the version itself when desired")
	require.Equal(t, b, push.CurrentVersion(lrps, app, push.ProcessGUID(app, "ffffffff")), "else the newest other version")
	require.Nil(t, push.CurrentVersion(lrps, push.AppGUID("new"), push.ProcessGUID(push.AppGUID("new"), "ffffffff")))
}

func TestStampPushedAt(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 5, time.FixedZone("x", 3600))
	require.JSONEq(t, `{"app_name":"web","extra":{"a":1},"pushed_at":"2026-11-22T11:00:00.000000005Z"}`,
		push.StampPushedAt(`{"app_name":"web","extra":{"a":1}}`, at))
	require.Equal(t, "plain text", push.StampPushedAt("plain text", at), "not JSON: unchanged")
	require.Equal(t, "", push.StampPushedAt("", at))
	require.Equal(t, "null", push.StampPushedAt("null", at))
}
