package commands_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"

	"drover.dev/ctl/commands"
	"drover.dev/ctl/push/registrytest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

var dockerWebConfig = v1.Config{
	Entrypoint:   []string{"/bin/httpd", "-f"},
	Cmd:          []string{"-p", "8000"},
	User:         "1000",
	WorkingDir:   "/srv",
	ExposedPorts: map[string]struct{}{"8000/tcp": {}},
}

// dockerEnv is ft's env with a fresh variables map.
func dockerEnv(ft *fakeTarget) commands.Env {
	env := ft.env
	env.Vars = map[string]string{}
	for k, v := range ft.env.Vars {
		env.Vars[k] = v
	}
	return env
}

// desiredLRPOf is the DesireLRP request the fake BBS received, nil if none.
func desiredLRPOf(ft *fakeTarget) *modelsv1.DesiredLRP {
	for _, r := range ft.bbs.recorded() {
		if d, ok := r.(*bbsv1.DesireLRPRequest); ok {
			return d.GetDesiredLrp()
		}
	}
	return nil
}

func TestPushDockerImage(t *testing.T) {
	ft := startFakeBBS(t, nil)
	reg := registrytest.Start(t, "", "")
	digest := reg.PushImage(t, "drover/web:v1", dockerWebConfig)
	env := dockerEnv(ft)

	res := run(t, env, "push", "--name", "web", "--docker-image", reg.Host+"/drover/web:v1", "--insecure-registry",
		"-i", "3", "-m", "128M", "--wait=false")
	require.Equal(t, commands.ExitOK, res.code, res.stdout+res.stderr)
	lrp := desiredLRPOf(ft)
	require.NotNil(t, lrp)
	require.Equal(t, "docker://"+reg.Host+"/drover/web@"+digest, lrp.GetRootfs())
	require.EqualValues(t, 3, lrp.GetInstances())
	require.EqualValues(t, 128, lrp.GetMemoryMb())
	require.Equal(t, "/bin/httpd", lrp.GetAction().GetRun().GetPath())
	require.Equal(t, []string{"-f", "-p", "8000"}, lrp.GetAction().GetRun().GetArgs())
	require.Equal(t, []uint32{8000}, lrp.GetPorts())
	require.Equal(t, "apps", lrp.GetDomain())
	require.Contains(t, res.stdout, "is "+digest)
	require.Contains(t, res.stdout, "Desired 3 instances of "+lrp.GetProcessGuid()+"; not waiting")

	// docker:// URLs work too, and a default registry fills in a missing host.
	env.Vars[commands.EnvDockerRegistry] = reg.Host
	res = run(t, env, "push", "--name", "web2", "--docker-image", "drover/web:v1", "--insecure-registry", "--wait=false",
		"--route", "www.example.org", "--port", "9000", "--command", "exec httpd -f -p $PORT")
	require.Equal(t, commands.ExitOK, res.code, res.stdout+res.stderr)
	var second *modelsv1.DesiredLRP
	for _, r := range ft.bbs.recorded() {
		if d, ok := r.(*bbsv1.DesireLRPRequest); ok {
			second = d.GetDesiredLrp()
		}
	}
	require.Equal(t, "docker://"+reg.Host+"/drover/web@"+digest, second.GetRootfs())
	require.Equal(t, []string{"-c", "exec httpd -f -p $PORT"}, second.GetAction().GetRun().GetArgs())
	require.Equal(t, []uint32{9000}, second.GetPorts())
	require.Contains(t, second.GetRoutes()["cf-router"].String(), "www.example.org")
}

func TestPushDockerImageCredentialsComeFromTheEnvironmentAndAreNeverPrinted(t *testing.T) {
	const password = "pw-for-the-registry-42"
	ft := startFakeBBS(t, nil)
	reg := registrytest.Start(t, "pusher", password)
	reg.PushImage(t, "drover/web:v1", dockerWebConfig)
	env := dockerEnv(ft)
	args := []string{"push", "--name", "web", "--docker-image", reg.Host + "/drover/web:v1", "--insecure-registry", "--wait=false"}

	res := run(t, env, args...)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "PushFailed: reading image docker://"+reg.Host+"/drover/web#v1 from "+reg.Host)
	require.Contains(t, res.stderr, "UNAUTHORIZED")
	require.Nil(t, desiredLRPOf(ft))

	env.Vars[commands.EnvDockerPassword] = password
	res = run(t, env, append(args, "--docker-username", "pusher")...)
	require.Equal(t, commands.ExitOK, res.code, res.stdout+res.stderr)
	lrp := desiredLRPOf(ft)
	require.Equal(t, "pusher", lrp.GetImageUsername())
	require.Equal(t, password, lrp.GetImagePassword())
	require.NotContains(t, res.stdout+res.stderr, password)

	env.Vars[commands.EnvDockerPassword] = "wrong-" + password
	env.Vars[commands.EnvDockerUsername] = "pusher"
	res = run(t, env, args...)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "UNAUTHORIZED")
	require.NotContains(t, res.stdout+res.stderr, password)
}

func TestPushDockerImageUsageErrors(t *testing.T) {
	ft := startFakeBBS(t, nil)
	env := dockerEnv(ft)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("not a certificate"), 0o600))
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"image and dir", []string{"push", ".", "--name", "web", "--docker-image", "h.example/a:v1"}, nil, "push --docker-image takes no DIR"},
		{"dir without image", []string{"push", "--name", "web"}, nil, "push takes 1 argument: DIR"},
		{"route without image", []string{"push", ".", "--name", "web", "--route", "a.example.com"}, nil, "--route needs --docker-image"},
		{"port without image", []string{"push", ".", "--name", "web", "--port", "80"}, nil, "--port needs --docker-image"},
		{"insecure without image", []string{"push", ".", "--name", "web", "--insecure-registry"}, nil, "--insecure-registry needs --docker-image"},
		{"stack with image", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1", "--stack", "busybox"}, nil, "--stack is for pushing a DIR"},
		{"no name", []string{"push", "--docker-image", "h.example/a:v1"}, nil, "push needs --name NAME"},
		{"docker: without //", []string{"push", "--name", "web", "--docker-image", "docker:user/image"}, nil, "--docker-image: invalid docker image reference: docker: must be followed by //"},
		{"uppercase", []string{"push", "--name", "web", "--docker-image", "h.example/User/Image"}, nil, "the repository must be lowercase"},
		{"bad tag", []string{"push", "--name", "web", "--docker-image", "h.example/a:bad+tag"}, nil, "the tag must be"},
		{"short digest", []string{"push", "--name", "web", "--docker-image", "h.example/a@sha256:abc"}, nil, "the digest must be sha256"},
		{"credentials in the ref", []string{"push", "--name", "web", "--docker-image", "docker://u:secretpw@h.example/a"}, nil, "credentials in the URL"},
		{"no registry", []string{"push", "--name", "web", "--docker-image", "drover/web:v1"}, nil, "names no registry: write HOST[:PORT]/REPO or pass --docker-registry HOST"},
		{"user without password", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1", "--docker-username", "u"}, nil, "needs the password in $DROVER_DOCKER_PASSWORD"},
		{"password without user", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1"}, map[string]string{commands.EnvDockerPassword: "p"}, "name the registry user with --docker-username"},
		{"port out of range", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1", "--port", "70000"}, nil, `invalid value "70000" for flag -port`},
		{"bad route", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1", "--route", "no spaces"}, nil, "--route \"no spaces\" is not a valid DNS hostname"},
		{"two-line command", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1", "--command", "a\nb"}, nil, "--command must be one line"},
		{"bad registry CA", []string{"push", "--name", "web", "--docker-image", "h.example/a:v1", "--registry-ca", ca}, nil, "holds no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := dockerEnv(ft)
			for k, v := range tc.env {
				e.Vars[k] = v
			}
			res := run(t, e, tc.args...)
			require.Equal(t, commands.ExitUsage, res.code, res.stdout+res.stderr)
			require.Contains(t, res.stderr, tc.want)
			require.NotContains(t, res.stderr, "secretpw")
		})
	}
	require.Nil(t, desiredLRPOf(ft), "nothing desired")
	_ = env
}

func TestPushDockerImageFailures(t *testing.T) {
	ft := startFakeBBS(t, nil)
	reg := registrytest.Start(t, "", "")
	reg.PushImage(t, "drover/noport:v1", v1.Config{Cmd: []string{"/bin/web"}})
	env := dockerEnv(ft)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"plain HTTP without --insecure-registry", []string{"--docker-image", reg.Host + "/drover/noport:v1"}, "needs --insecure-registry"},
		{"no port", []string{"--docker-image", reg.Host + "/drover/noport:v1", "--insecure-registry"}, "exposes no TCP port (EXPOSE): pass --port PORT"},
		{"unknown tag", []string{"--docker-image", reg.Host + "/drover/noport:v2", "--insecure-registry"}, "MANIFEST_UNKNOWN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, env, append([]string{"push", "--name", "web", "--wait=false"}, tc.args...)...)
			require.Equal(t, commands.ExitFailure, res.code, res.stdout+res.stderr)
			require.True(t, strings.HasPrefix(res.stderr, "droverctl: PushFailed: "), res.stderr)
			require.Contains(t, res.stderr, tc.want)
		})
	}
	require.Nil(t, desiredLRPOf(ft))
}
