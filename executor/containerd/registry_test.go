package containerd

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"drover.dev/executor"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/require"
)

// registryTestConfig is a test cell that may pull from reg over plain HTTP and removes
// unused images at once.
func registryTestConfig(t *testing.T, reg *testRegistry) Config {
	cfg := testConfig(t)
	cfg.Registry.Insecure = []string{reg.Host}
	cfg.Registry.GCGrace = 0
	cfg.Registry.PullTimeout = 2 * time.Minute
	return cfg
}

// dockerSpec is a container on a registry image.
func dockerSpec(t *testing.T, rootfs string) executor.ContainerSpec {
	spec := busyboxSpec(t)
	spec.RootFS = rootfs
	return spec
}

// containerImage is the image name containerd recorded for the container guid.
func containerImage(t *testing.T, r *Runtime, guid string) string {
	t.Helper()
	ctx := r.nsCtx(context.Background())
	c, err := r.client.LoadContainer(ctx, guid)
	require.NoError(t, err)
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	require.NoError(t, err)
	return info.Image
}

// requireNoLeases checks that no pull left a lease behind.
func requireNoLeases(t *testing.T, r *Runtime) {
	t.Helper()
	leases, err := r.client.LeasesService().List(r.nsCtx(context.Background()))
	require.NoError(t, err)
	require.Empty(t, leases, "leases left behind")
}

func TestRegistryImageConfigTagDigestAndDefaultRegistry(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	cfg.Registry.Default = reg.Host
	r := newTestRuntime(t, cfg)
	repo := "drover/web-" + randHex(t, 4)
	dgst := reg.push(repo, "v1", testImage(t, "one"))
	pinned := reg.Host + "/" + repo + "@" + dgst

	byTag := dockerSpec(t, "docker://"+reg.Host+"/"+repo+"#v1")
	byTag.Env = []string{"OVERRIDE=spec"}
	create(t, r, byTag)
	require.Equal(t, pinned, containerImage(t, r, byTag.Guid), "the container is pinned to the digest")

	exit, out, stderr := run(t, r, byTag.Guid, "", `id -u; pwd; echo "$GREETING $OVERRIDE $HOME"; cat /marker`)
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, testImageUID+"\n"+testImageWorkDir+"\nhello-from-image spec /home/app\none\n", out,
		"image USER, WORKDIR and ENV are the defaults; the container env overrides the image's")
	_, out, _ = run(t, r, byTag.Guid, "root", "id -u")
	require.Equal(t, "0\n", out, "a run action's user wins over the image's")
	_, out, _ = run(t, r, byTag.Guid, "", `echo $GREETING`, "GREETING=from-run")
	require.Equal(t, "from-run\n", out, "a run action's env wins over the image's")
	var execOut syncBuffer
	p, err := r.ExecInteractive(context.Background(), byTag.Guid, executor.InteractiveSpec{
		Args: []string{"sh", "-c", "id -u; pwd"}, Stdout: &execOut,
	})
	require.NoError(t, err)
	require.Equal(t, 0, waitExit(t, p).Code)
	require.Equal(t, testImageUID+"\n"+testImageWorkDir+"\n", execOut.String(), "an exec without a user runs as the image's USER in its WORKDIR")

	byDefault := dockerSpec(t, "docker:///"+repo+"#v1")
	create(t, r, byDefault)
	require.Equal(t, pinned, containerImage(t, r, byDefault.Guid), "docker:/// is the default registry")

	byDigest := dockerSpec(t, "docker://"+reg.Host+"/"+repo+"@"+dgst)
	create(t, r, byDigest)
	require.Equal(t, pinned, containerImage(t, r, byDigest.Guid))
	_, out, _ = run(t, r, byDigest.Guid, "", "cat /marker")
	require.Equal(t, "one\n", out)
	requireNoLeases(t, r)

	var meta containerMeta
	require.NoError(t, readJSON(r.state.containerMeta(byDigest.Guid), &meta))
	require.Equal(t, []string{"/bin/sh", "-c"}, meta.Image.Entrypoint)
	require.Equal(t, []string{"echo hi"}, meta.Image.Cmd)
	require.Equal(t, []string{"8080/tcp"}, meta.Image.ExposedPorts)
}

func TestRegistryMovedTagReachesNewContainersOnly(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	r := newTestRuntime(t, cfg)
	repo := "drover/moving-" + randHex(t, 4)
	url := "docker://" + reg.Host + "/" + repo + "#stable"

	first := reg.push(repo, "stable", testImage(t, "one"))
	old := dockerSpec(t, url)
	create(t, r, old)
	second := reg.push(repo, "stable", testImage(t, "two"))
	require.NotEqual(t, first, second)
	fresh := dockerSpec(t, url)
	create(t, r, fresh)

	require.True(t, strings.HasSuffix(containerImage(t, r, old.Guid), "@"+first))
	require.True(t, strings.HasSuffix(containerImage(t, r, fresh.Guid), "@"+second))
	_, out, _ := run(t, r, old.Guid, "", "cat /marker")
	require.Equal(t, "one\n", out, "a running container keeps its image")
	_, out, _ = run(t, r, fresh.Guid, "", "cat /marker")
	require.Equal(t, "two\n", out, "a new container gets the tag's new digest")
}

func TestRegistryConcurrentCreatesFetchEachBlobOnce(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	cfg.Network.PortRangeEnd = cfg.Network.PortRangeStart + 30
	r := newTestRuntime(t, cfg)
	repo := "drover/many-" + randHex(t, 4)
	img := testImage(t, "many")
	dgst := reg.push(repo, "v1", img)

	const n = 10
	specs := make([]executor.ContainerSpec, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range specs {
		specs[i] = dockerSpec(t, "docker://"+reg.Host+"/"+repo+"#v1")
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.Create(context.Background(), specs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "create %d", i)
		require.True(t, strings.HasSuffix(containerImage(t, r, specs[i].Guid), "@"+dgst))
	}

	counts := reg.counts()
	for path, c := range counts {
		require.LessOrEqual(t, c, 1, "%s fetched %d times", path, c)
	}
	require.Equal(t, 1, counts["/v2/"+repo+"/manifests/"+dgst], "the manifest is fetched once: %v", counts)
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers[1:] { // the busybox layer may be in the content store already
		d, err := l.Digest()
		require.NoError(t, err)
		require.Equal(t, 1, counts["/v2/"+repo+"/blobs/"+d.String()], "layer %s: %v", d, counts)
	}
	requireNoLeases(t, r)
}

func TestRegistryCredentials(t *testing.T) {
	const password = "s3cret-pa55word-for-test"
	reg := newTestRegistry(t, "drover", password)
	cfg := registryTestConfig(t, reg)
	var logs syncBuffer
	r, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	t.Cleanup(func() { destroyAllAndClose(t, cfg, r) })
	repo := "drover/private-" + randHex(t, 4)
	reg.push(repo, "v1", testImage(t, "private"))
	url := "docker://" + reg.Host + "/" + repo + "#v1"

	for _, tc := range []struct{ name, user, password string }{
		{"missing", "", ""},
		{"wrong password", "drover", "not-" + password},
		{"wrong user", "someone", password},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := dockerSpec(t, url)
			spec.ImageUsername, spec.ImagePassword = tc.user, tc.password
			_, err := r.Create(context.Background(), spec)
			require.Error(t, err)
			var pe *PullError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "unauthorized", pe.Reason, err.Error())
			require.Contains(t, err.Error(), reg.Host+"/"+repo+":v1")
			require.NotContains(t, err.Error(), password)
			requireNothingLeft(t, r, cfg, spec.Guid, "")
		})
	}

	spec := dockerSpec(t, url)
	spec.ImageUsername, spec.ImagePassword = "drover", password
	create(t, r, spec)
	_, out, _ := run(t, r, spec.Guid, "", "cat /marker")
	require.Equal(t, "private\n", out)

	// Cached on the cell, the image still needs the credentials.
	again := dockerSpec(t, url)
	_, err = r.Create(context.Background(), again)
	require.ErrorContains(t, err, "unauthorized")
	requireNoLeases(t, r)
	require.NotContains(t, logs.String(), password, "the password is never logged")
}

func TestRegistryFailuresNameImageAndCause(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedHost := closed.Addr().String()
	require.NoError(t, closed.Close())
	cfg.Registry.Insecure = append(cfg.Registry.Insecure, refusedHost)
	r := newTestRuntime(t, cfg)
	repo := "drover/there-" + randHex(t, 4)
	reg.push(repo, "v1", testImage(t, "there"))

	for _, tc := range []struct {
		name, url, image, reason string
	}{
		{"unknown repository", "docker://" + reg.Host + "/drover/nothing-here#v1", reg.Host + "/drover/nothing-here:v1", "not found"},
		{"unknown tag", "docker://" + reg.Host + "/" + repo + "#v9", reg.Host + "/" + repo + ":v9", "not found"},
		{"unknown digest", "docker://" + reg.Host + "/" + repo + "@" + digest.FromString("x").String(), repo + "@sha256:", "not found"},
		{"connection refused", "docker://" + refusedHost + "/drover/x#v1", refusedHost + "/drover/x:v1", "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := dockerSpec(t, tc.url)
			_, err := r.Create(context.Background(), spec)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.image)
			require.Contains(t, err.Error(), tc.reason)
			require.LessOrEqual(t, len(err.Error()), 700, "the reason is bounded")
			requireNothingLeft(t, r, cfg, spec.Guid, "")
		})
	}
	requireNoLeases(t, r)

	// The same registry, not listed as insecure: HTTPS fails with a clear reason.
	strict := testConfig(t)
	rs := newTestRuntime(t, strict)
	spec := dockerSpec(t, "docker://"+reg.Host+"/"+repo+"#v1")
	_, err = rs.Create(context.Background(), spec)
	require.Error(t, err)
	require.Contains(t, err.Error(), reg.Host+" is not listed in insecure_registries")
	requireNothingLeft(t, rs, strict, spec.Guid, "")
}

func TestRegistryImageCollectedAfterLastContainer(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	r := newTestRuntime(t, cfg)
	repo := "drover/gc-" + randHex(t, 4)
	img := testImage(t, "gc")
	reg.push(repo, "v1", img)
	url := "docker://" + reg.Host + "/" + repo + "#v1"
	ctx := namespaces.WithNamespace(context.Background(), cfg.Namespace)

	a, b := dockerSpec(t, url), dockerSpec(t, url)
	create(t, r, a)
	create(t, r, b)
	pre := busyboxSpec(t)
	create(t, r, pre)
	name := containerImage(t, r, a.Guid)
	preName := containerImage(t, r, pre.Guid)
	layers, err := img.Layers()
	require.NoError(t, err)
	unique, err := layers[len(layers)-1].Digest()
	require.NoError(t, err)
	uniqueDigest := digest.Digest(unique.String())
	_, err = r.client.ContentStore().Info(ctx, uniqueDigest)
	require.NoError(t, err, "the layer is in the content store")

	require.NoError(t, r.Destroy(context.Background(), a.Guid))
	require.NoError(t, r.Destroy(context.Background(), pre.Guid))
	// The image stays while b uses it (give a wrong collection the time to happen).
	require.Never(t, func() bool {
		_, err := r.client.ImageService().Get(ctx, name)
		return errdefs.IsNotFound(err)
	}, 2*time.Second, 100*time.Millisecond, "collected while a container uses it")

	require.NoError(t, r.Destroy(context.Background(), b.Guid))
	require.Eventually(t, func() bool {
		_, err := r.client.ImageService().Get(ctx, name)
		return errdefs.IsNotFound(err)
	}, 60*time.Second, 100*time.Millisecond, "the image is removed after its last container")
	require.Eventually(t, func() bool {
		_, err := r.client.ContentStore().Info(ctx, uniqueDigest)
		return errdefs.IsNotFound(err)
	}, 60*time.Second, 100*time.Millisecond, "containerd collects its layers")
	_, err = r.client.ImageService().Get(ctx, preName)
	require.NoError(t, err, "preloaded images are never collected")

	// Pulled again on demand.
	c := dockerSpec(t, url)
	create(t, r, c)
	_, out, _ := run(t, r, c.Guid, "", "cat /marker")
	require.Equal(t, "gc\n", out)
}

func TestRegistryImageKeptDuringGrace(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	cfg.Registry.GCGrace = time.Hour
	r := newTestRuntime(t, cfg)
	repo := "drover/grace-" + randHex(t, 4)
	reg.push(repo, "v1", testImage(t, "grace"))
	spec := dockerSpec(t, "docker://"+reg.Host+"/"+repo+"#v1")
	create(t, r, spec)
	name := containerImage(t, r, spec.Guid)
	require.NoError(t, r.Destroy(context.Background(), spec.Guid))

	r.gcMu.Lock()
	_, pending := r.gc.unusedSince[name]
	r.gcMu.Unlock()
	require.True(t, pending, "a collection is scheduled")
	require.Greater(t, int64(r.collectImage(name)), int64(0), "the grace is not over")
	_, err := r.client.ImageService().Get(r.nsCtx(context.Background()), name)
	require.NoError(t, err, "the image stays during the grace")

	// A new container within the grace reuses it without a pull.
	reg.resetCounts()
	again := dockerSpec(t, "docker://"+reg.Host+"/"+repo+"#v1")
	create(t, r, again)
	require.Equal(t, name, containerImage(t, r, again.Guid))
	for path, n := range reg.counts() {
		require.NotContains(t, path, "/blobs/", "fetched %s %d times", path, n)
	}
}

func TestRegistryHTTPSWithConfiguredCA(t *testing.T) {
	reg, caFile := newTLSTestRegistry(t)
	repo := "drover/tls-" + randHex(t, 4)
	reg.push(repo, "v1", testImage(t, "tls"))
	url := "docker://" + reg.Host + "/" + repo + "#v1"

	untrusted := testConfig(t)
	ru := newTestRuntime(t, untrusted)
	spec := dockerSpec(t, url)
	_, err := ru.Create(context.Background(), spec)
	require.ErrorContains(t, err, "TLS failure")
	require.ErrorContains(t, err, reg.Host+"/"+repo+":v1")
	requireNothingLeft(t, ru, untrusted, spec.Guid, "")

	trusted := testConfig(t)
	trusted.Registry.CAFile = caFile
	rt := newTestRuntime(t, trusted)
	spec = dockerSpec(t, url)
	create(t, rt, spec)
	_, out, _ := run(t, rt, spec.Guid, "", "cat /marker")
	require.Equal(t, "tls\n", out)
}

func TestRegistrySlowPullDoesNotBlockOtherImages(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	r := newTestRuntime(t, cfg)
	slowRepo, fastRepo := "drover/slow-"+randHex(t, 4), "drover/fast-"+randHex(t, 4)
	reg.push(slowRepo, "v1", testImage(t, "slow"))
	reg.push(fastRepo, "v1", testImage(t, "fast"))

	release := reg.hold("/v2/" + slowRepo + "/blobs/")
	slow := dockerSpec(t, "docker://"+reg.Host+"/"+slowRepo+"#v1")
	slowDone := make(chan error, 1)
	go func() {
		_, err := r.Create(context.Background(), slow)
		slowDone <- err
	}()
	// Wait until the slow pull is in the middle of fetching its blobs.
	require.Eventually(t, func() bool {
		for path := range reg.counts() {
			if strings.Contains(path, "/v2/"+slowRepo+"/blobs/") {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond)

	fast := dockerSpec(t, "docker://"+reg.Host+"/"+fastRepo+"#v1")
	create(t, r, fast)
	select {
	case err := <-slowDone:
		t.Fatalf("the slow create ended before its blobs were released: %v", err)
	default:
	}

	release()
	select {
	case err := <-slowDone:
		require.NoError(t, err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the slow create never finished")
	}
	_, out, _ := run(t, r, slow.Guid, "", "cat /marker")
	require.Equal(t, "slow\n", out)
}
