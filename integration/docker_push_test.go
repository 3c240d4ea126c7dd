package integration

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/images"
)

// TestDockerPush drives `droverctl push --docker-image` as Cloud Controller does for
// docker apps (issue 14's acceptance 6): the image's config is read from the stack's
// registry (no staging task), the LRP runs its entrypoint and cmd as its user, routed on
// its exposed port; pushing v2 over v1 under a 20 ms poller through the router fails no
// request, v2 serves after, and one LRP is left.
func TestDockerPush(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{
		Cells:      1,
		Routing:    &devstacktest.RoutingOptions{},
		Fileserver: true,
		Registry:   true,
	})
	ps := &pushStack{routedStack: &routedStack{cellStack: &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}}}
	plain := s.Registry.Plain
	const name = "webimg"
	host := name + "." + appsDomain
	image := func(tag string) string { return plain.Host() + "/" + images.WebRepository + ":" + tag }

	res := ps.droverctlRun(t, "push", "--docker-image", image("v1"), "--insecure-registry", "--name", name, "--instances", "2")
	require.NoError(t, res.err, res.output())
	ps.waitServing(t, host, "drover/web v1")
	code, body, err := ps.getThroughRouter(host)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, body)
	page := parsePage(body)
	require.Equal(t, images.WebGreeting, page.Fields["greeting"], "the image's ENV")
	require.Equal(t, "1000", page.Fields["uid"], "the image's USER")
	require.Equal(t, images.WebWorkdir, page.Fields["workdir"], "the image's WORKDIR")
	require.Equal(t, "8080", page.Fields["args"], "the image's CMD after its ENTRYPOINT")
	require.Empty(t, ps.tasks(t), "a docker push stages nothing")
	old := ps.appLRPs(t, name)
	require.Len(t, old, 1)
	require.True(t, strings.HasPrefix(old[0].GetRootfs(), "docker://"), "rootfs %q", old[0].GetRootfs())
	require.EqualValues(t, 2, old[0].GetInstances())
	ps.waitImageRunning(t, old[0].GetProcessGuid(), 2)

	poll := ps.pollRouter(host, "drover/web v1", "drover/web v2")
	res = ps.droverctlRun(t, "push", "--docker-image", image("v2"), "--insecure-registry", "--name", name, "--instances", "2")
	require.NoError(t, res.err, res.output())
	// Keep polling while the old version's containers go away.
	require.Eventually(t, func() bool { return poll.seen("drover/web v2") >= 25 }, imageRunningWait, cellPoll,
		"v2 did not answer 25 requests after the push")
	stats := poll.stop()
	t.Logf("%d requests through the router during the rollout: %v", stats.requests, stats.bodies)
	require.Empty(t, stats.failures, "requests failed during the rollout")
	require.Positive(t, stats.bodies["drover/web v1"], "v1 served during the push")
	require.Positive(t, stats.bodies["drover/web v2"], "v2 served after the push")
	ps.waitServing(t, host, "drover/web v2")
	now := ps.appLRPs(t, name)
	require.Len(t, now, 1, "the old version is removed")
	require.NotEqual(t, old[0].GetProcessGuid(), now[0].GetProcessGuid(), "a new image is a new version (LRP)")

	// A private image: the TLS registry with the dev CA and the password from the
	// environment; droverctl never prints the password.
	auth := s.Registry.Auth
	password, err := auth.Password()
	require.NoError(t, err)
	res = ps.dockerPushWithEnv(t, []string{"DROVER_DOCKER_PASSWORD=" + password},
		"push", "--docker-image", auth.Host()+"/"+images.WebRepository+":v2", "--name", "private",
		"--docker-username", auth.Username, "--registry-ca", auth.CAFile)
	require.NoError(t, res.err, res.output())
	require.NotContains(t, res.output(), password)
	ps.waitServing(t, "private."+appsDomain, "drover/web v2")
	private := ps.appLRPs(t, "private")
	require.Len(t, private, 1)
	require.NotContains(t, private[0].String(), password, "list views carry no image password")

	res = ps.dockerPushWithEnv(t, []string{"DROVER_DOCKER_PASSWORD=wrong-" + password[:8]},
		"push", "--docker-image", auth.Host()+"/"+images.WebRepository+":v1", "--name", "private-wrong",
		"--docker-username", auth.Username, "--registry-ca", auth.CAFile)
	require.Error(t, res.err, "a wrong password fails the push")
	require.Contains(t, strings.ToLower(res.stderr), "unauthorized")
	require.NotContains(t, res.output(), "wrong-"+password[:8])
	require.Empty(t, ps.appLRPs(t, "private-wrong"))

	ps.deleteAllLRPs(t)
	ps.requireHostClean(t)
}

// dockerPushWithEnv runs droverctl with args and extra environment, like droverctlRun.
func (ps *pushStack) dockerPushWithEnv(t *testing.T, env []string, args ...string) pushResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pushTimeout)
	defer cancel()
	cmd := droverctlCommand(t, ctx, ps.Stack, args...)
	cmd.Env = append(cmd.Env,
		"DROVER_FILESERVER_URL="+ps.Fileserver.URL(),
		"DROVER_ROUTE_EMITTER_ADDRESS="+ps.RouteEmitter.Address(),
		"DROVER_APPS_DOMAIN="+appsDomain,
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := pushResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
	t.Logf("droverctl %s: %v\n%s", strings.Join(args, " "), err, res.output())
	return res
}

// waitImageRunning waits (imageRunningWait) until guid has n RUNNING instances.
func (ps *pushStack) waitImageRunning(t *testing.T, guid string, n int) {
	t.Helper()
	(&imageStack{cellStack: ps.cellStack}).waitImageRunning(t, guid, n)
}
