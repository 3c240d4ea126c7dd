package push_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	"drover.dev/ctl/push/registrytest"
	"drover.dev/lib/dockerref"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

const (
	registryUser     = "pusher"
	registryPassword = "s3cret-registry-pw"
)

var webConfig = v1.Config{
	Entrypoint:   []string{"/bin/httpd"},
	Cmd:          []string{"-f", "-p", "8000"},
	User:         "1000",
	WorkingDir:   "/srv",
	Env:          []string{"GREETING=hello"},
	ExposedPorts: map[string]struct{}{"8000/tcp": {}},
}

// dockerHarness is a docker push against the fake BBS and route-emitter of push_test.go
// and a real (in-memory) registry.
type dockerHarness struct {
	*harness
	reg    *registrytest.Registry
	client push.RegistryClient
	opts   push.DockerOptions
}

func newDockerHarness(t *testing.T, withAuth bool) *dockerHarness {
	t.Helper()
	h := newHarness(t)
	user, password := "", ""
	if withAuth {
		user, password = registryUser, registryPassword
	}
	reg := registrytest.Start(t, user, password)
	ref, err := dockerref.ParseImage(reg.Host + "/drover/web:v1")
	require.NoError(t, err)
	return &dockerHarness{
		harness: h, reg: reg,
		client: push.RegistryClient{Insecure: true, Platform: v1.Platform{OS: "linux", Architecture: "amd64"}},
		opts: push.DockerOptions{Wait: true, StartTimeout: 10 * time.Second, App: push.DockerApp{
			Name: "web", Image: ref, Instances: 2, MemoryMB: 64, DiskMB: 256, Domain: "example.com",
		}},
	}
}

func (h *dockerHarness) push(t *testing.T) (push.DockerResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return push.PushDocker(ctx, h.opts, push.Deps{
		BBS: h.bbs, Stager: h.stager, Logs: h.logs, Routes: h.routes, Images: h.client,
		Out: &h.out, PollInterval: time.Millisecond,
	})
}

func TestDockerPushRunsTheImagePinnedToItsDigest(t *testing.T) {
	h := newDockerHarness(t, false)
	digest := h.reg.PushImage(t, "drover/web:v1", webConfig)

	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.True(t, res.Desired)
	lrp := h.bbs.lrp(res.ProcessGUID)
	require.NotNil(t, lrp)

	require.Equal(t, "docker://"+h.reg.Host+"/drover/web@"+digest, lrp.GetRootfs())
	require.Equal(t, res.Rootfs, lrp.GetRootfs())
	require.True(t, push.IsVersionOf(lrp.GetProcessGuid(), push.AppGUID("web")))
	require.EqualValues(t, 2, lrp.GetInstances())
	run := lrp.GetAction().GetRun()
	require.Equal(t, "/bin/httpd", run.GetPath())
	require.Equal(t, []string{"-f", "-p", "8000"}, run.GetArgs())
	require.Equal(t, "1000", run.GetUser())
	require.Equal(t, "/srv", run.GetDir())
	require.Equal(t, []string{"PORT=8000"}, envOf(lrp.GetEnv()))
	require.Equal(t, []string{"PORT=8000"}, envOf(run.GetEnv()))
	require.Equal(t, []uint32{8000}, lrp.GetPorts())
	require.EqualValues(t, 8000, lrp.GetCheckDefinition().GetChecks()[0].GetTcpCheck().GetPort())
	require.Equal(t, []string{"web.example.com"}, push.Hostnames(lrp))
	route := lrp.GetRoutes()[push.RouterName].GetListValue().GetValues()[0].GetStructValue().GetFields()
	require.EqualValues(t, 8000, route["port"].GetNumberValue())
	require.Empty(t, lrp.GetSetup(), "no droplet to download")
	require.Empty(t, lrp.GetImageUsername())
	require.Contains(t, lrp.GetAnnotation(), `"docker_image":"docker://`+h.reg.Host+`/drover/web@`+digest+`"`)
	v, ok := push.ParseAppVersion(lrp)
	require.True(t, ok)
	require.Equal(t, "web", v.Name())

	out := h.out.String()
	require.Contains(t, out, "Image docker://"+h.reg.Host+"/drover/web#v1 is "+digest)
	require.Contains(t, out, "2 of 2 instances running\n")
	require.Contains(t, out, "Routed at http://web.example.com\n")
	require.Equal(t, "http://web.example.com", res.URL)
	require.Equal(t, -1, h.j.index("Stage "), "no staging")
}

func TestDockerPushOfANewDigestReplacesTheOldVersion(t *testing.T) {
	h := newDockerHarness(t, false)
	h.reg.PushImage(t, "drover/web:v1", webConfig)
	first, err := h.push(t)
	require.NoError(t, err, h.out.String())

	// The same image again: the same version, nothing desired.
	again, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.Equal(t, first.ProcessGUID, again.ProcessGUID)
	require.False(t, again.Desired)

	// The tag moves to a new digest: a new version, rolled out, the old one removed.
	h.reg.PushImage(t, "drover/web:v1", webConfig)
	h.out.Reset()
	second, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.NotEqual(t, first.ProcessGUID, second.ProcessGUID)
	require.True(t, second.Desired)
	require.Equal(t, []string{first.ProcessGUID}, second.Removed)
	require.Nil(t, h.bbs.lrp(first.ProcessGUID))
	require.Less(t, h.j.index("DesireLRP "+second.ProcessGUID), h.j.index("ClearRoutes "+first.ProcessGUID))
	require.Less(t, h.j.index("ClearRoutes "+first.ProcessGUID), h.j.index("RemoveDesiredLRP "+first.ProcessGUID))
}

func TestDockerPushSettingsMakeVersions(t *testing.T) {
	ref, err := dockerref.ParseImage("registry.example:5000/drover/web:v1")
	require.NoError(t, err)
	img := push.Image{Digest: "sha256:" + strings.Repeat("a", 64), ExposedPorts: []string{"8080/tcp"}, Cmd: []string{"/bin/web"}}
	base := push.DockerApp{Name: "web", Image: ref, Instances: 1, MemoryMB: 64, DiskMB: 256, Domain: "example.com"}
	v := push.DockerVersion(base, img)
	same := base
	same.Instances = 5
	require.Equal(t, v, push.DockerVersion(same, img), "instances only scale")
	other := img
	other.Digest = "sha256:" + strings.Repeat("b", 64)
	require.NotEqual(t, v, push.DockerVersion(base, other), "a new digest is a new version")
	for _, change := range []func(*push.DockerApp){
		func(a *push.DockerApp) { a.MemoryMB = 128 },
		func(a *push.DockerApp) { a.DiskMB = 512 },
		func(a *push.DockerApp) { a.Command = "exec /bin/web" },
		func(a *push.DockerApp) { a.Port = 9000 },
		func(a *push.DockerApp) { a.Route = "www.example.com" },
		func(a *push.DockerApp) { a.Credentials = push.Credentials{Username: "u", Password: "p"} },
	} {
		changed := base
		change(&changed)
		require.NotEqual(t, v, push.DockerVersion(changed, img))
	}
	rotated := base
	rotated.Credentials = push.Credentials{Username: "u", Password: "p1"}
	rotated2 := rotated
	rotated2.Credentials.Password = "p2"
	require.Equal(t, push.DockerVersion(rotated, img), push.DockerVersion(rotated2, img), "a new password is no new version")
}

func TestDockerPushCommandPortAndRoute(t *testing.T) {
	h := newDockerHarness(t, false)
	h.reg.PushImage(t, "drover/web:v1", v1.Config{Cmd: []string{"/bin/sh"}}) // exposes nothing
	h.opts.App.Command = "exec httpd -f -p $PORT"
	h.opts.App.Port = 9090
	h.opts.App.Route = "www.example.org"
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	lrp := h.bbs.lrp(res.ProcessGUID)
	run := lrp.GetAction().GetRun()
	require.Equal(t, "/bin/sh", run.GetPath())
	require.Equal(t, []string{"-c", "exec httpd -f -p $PORT"}, run.GetArgs())
	require.Equal(t, "root", run.GetUser(), "an image without USER runs as root (in its user namespace)")
	require.Equal(t, []uint32{9090}, lrp.GetPorts())
	require.Equal(t, []string{"PORT=9090"}, envOf(run.GetEnv()))
	require.Equal(t, []string{"www.example.org"}, push.Hostnames(lrp))
	require.Equal(t, "http://www.example.org", res.URL)
}

func TestDockerPushPortOfSeveralExposedIsTheLowestTCP(t *testing.T) {
	app := push.DockerApp{Name: "web"}
	port, err := push.AppPortOf(app, push.Image{ExposedPorts: []string{"9000/tcp", "53/udp", "8443", "8080/tcp"}})
	require.NoError(t, err)
	require.EqualValues(t, 8080, port)
	_, err = push.AppPortOf(app, push.Image{ExposedPorts: []string{"53/udp"}})
	require.ErrorContains(t, err, "exposes no TCP port (EXPOSE): pass --port PORT")
	_, err = push.AppPortOf(app, push.Image{ExposedPorts: []string{"http/tcp"}})
	require.ErrorContains(t, err, `invalid port "http/tcp"`)
}

func TestDockerPushWithCredentials(t *testing.T) {
	h := newDockerHarness(t, true)
	h.reg.PushImage(t, "drover/web:v1", webConfig)

	_, err := h.push(t)
	require.ErrorContains(t, err, "reading image docker://"+h.reg.Host+"/drover/web#v1 from "+h.reg.Host)
	require.ErrorContains(t, err, "UNAUTHORIZED")
	require.Empty(t, h.j.all(), "nothing desired without access to the image")

	h.opts.App.Credentials = push.Credentials{Username: registryUser, Password: "wrong-password"}
	_, err = h.push(t)
	require.ErrorContains(t, err, "UNAUTHORIZED")
	require.NotContains(t, err.Error(), "wrong-password")

	h.opts.App.Credentials = push.Credentials{Username: registryUser, Password: registryPassword}
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	lrp := h.bbs.lrp(res.ProcessGUID)
	require.Equal(t, registryUser, lrp.GetImageUsername())
	require.Equal(t, registryPassword, lrp.GetImagePassword())
	require.NotContains(t, h.out.String(), registryPassword)

	// A re-push of the same version (a rotated password) gives it the credentials.
	h.j = &journal{}
	h.bbs.j = h.j
	again, err := h.push(t)
	require.NoError(t, err)
	require.False(t, again.Desired)
	require.NotContains(t, h.out.String(), registryPassword)
	require.Contains(t, h.out.String(), "Updating the registry credentials of "+res.ProcessGUID)
}

func TestDockerPushBadInput(t *testing.T) {
	h := newDockerHarness(t, false)
	h.reg.PushImage(t, "drover/web:v1", webConfig)
	h.reg.PushImage(t, "drover/noport:v1", v1.Config{Cmd: []string{"/bin/web"}})
	h.reg.PushImage(t, "drover/nocmd:v1", v1.Config{ExposedPorts: map[string]struct{}{"80/tcp": {}}})
	image := func(s string) dockerref.Ref {
		r, err := dockerref.ParseImage(s)
		require.NoError(t, err)
		return r
	}
	cases := []struct {
		name   string
		change func(*push.DockerOptions)
		want   string
	}{
		{"no exposed port and no --port", func(o *push.DockerOptions) { o.App.Image = image(h.reg.Host + "/drover/noport:v1") }, "exposes no TCP port (EXPOSE): pass --port PORT"},
		{"no entrypoint or cmd", func(o *push.DockerOptions) { o.App.Image = image(h.reg.Host + "/drover/nocmd:v1") }, "has no ENTRYPOINT or CMD: pass --command"},
		{"unknown tag", func(o *push.DockerOptions) { o.App.Image = image(h.reg.Host + "/drover/web:v9") }, "MANIFEST_UNKNOWN"},
		{"unknown repository", func(o *push.DockerOptions) { o.App.Image = image(h.reg.Host + "/drover/none:v1") }, "NAME_UNKNOWN"},
		{"no image", func(o *push.DockerOptions) { o.App.Image = dockerref.Ref{} }, "--docker-image is required"},
		{"bad name", func(o *push.DockerOptions) { o.App.Name = "Web_1" }, "--name"},
		{"bad route", func(o *push.DockerOptions) { o.App.Route = "-bad-.example.com" }, "--route"},
		{"port out of range", func(o *push.DockerOptions) { o.App.Port = 70000 }, "--port 70000 must be between 1 and 65535"},
		{"multi-line command", func(o *push.DockerOptions) { o.App.Command = "a\nb" }, "--command must be one line"},
		{"long command", func(o *push.DockerOptions) { o.App.Command = strings.Repeat("x", push.MaxCommandLength+1) }, "--command must be at most"},
		{"user without password", func(o *push.DockerOptions) { o.App.Credentials = push.Credentials{Username: "u"} }, "both a user name and a password"},
		{"no memory", func(o *push.DockerOptions) { o.App.MemoryMB = 0 }, "--memory must be positive"},
	}
	base := h.opts
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.opts = base
			tc.change(&h.opts)
			h.j.entries = nil
			_, err := h.push(t)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, h.j.all(), "nothing desired")
		})
	}
}

func TestDockerPushRefusesPlainHTTPUnlessInsecure(t *testing.T) {
	h := newDockerHarness(t, false)
	h.reg.PushImage(t, "drover/web:v1", webConfig)
	h.client.Insecure = false
	h.client.Timeout = 5 * time.Second
	before := h.reg.Requests()
	_, err := h.push(t)
	require.ErrorContains(t, err, "needs --insecure-registry")
	require.Equal(t, before, h.reg.Requests(), "no plain HTTP request reached the registry")
}

func TestDockerPushCrashRemovesTheNewLRP(t *testing.T) {
	h := newDockerHarness(t, false)
	h.reg.PushImage(t, "drover/web:v1", webConfig)
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, _ int) []*modelsv1.ActualLRP {
		return []*modelsv1.ActualLRP{{ProcessGuid: l.GetProcessGuid(), State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED, CrashReason: "pull failed"}}
	}
	res, err := h.push(t)
	require.ErrorContains(t, err, "instance 0 crashed: pull failed")
	require.Nil(t, h.bbs.lrp(res.ProcessGUID))
}

// TestDockerLRPIsValidForTheBBS: what a docker push desires passes the BBS's rules
// (rootfs included).
func TestDockerLRPIsValidForTheBBS(t *testing.T) {
	ref, err := dockerref.ParseImage("127.0.0.1:5000/drover/web:v1")
	require.NoError(t, err)
	lrp, err := push.DockerDesiredLRP(push.DockerApp{
		Name: "web", Image: ref, Instances: 1, MemoryMB: 64, DiskMB: 256, Domain: "example.com",
		Credentials: push.Credentials{Username: "u", Password: "p"},
	}, push.Image{Digest: "sha256:" + strings.Repeat("c", 64), Entrypoint: []string{"/web"}, ExposedPorts: []string{"8080/tcp"}})
	require.NoError(t, err)
	require.NoError(t, models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}))
	_, err = push.DockerDesiredLRP(push.DockerApp{Name: "web", Image: ref}, push.Image{Digest: "sha256:short"})
	require.ErrorContains(t, err, "registry answered digest")
}

// envOf is NAME=VALUE of each variable.
func envOf(vars []*modelsv1.EnvironmentVariable) []string {
	var out []string
	for _, v := range vars {
		out = append(out, v.GetName()+"="+v.GetValue())
	}
	return out
}
