package rootfs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	executorcontainerd "drover.dev/executor/containerd"
	"drover.dev/lib/testenv"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testBusybox is Debian's busybox-static, which the image is built from.
const testBusybox = "/usr/bin/busybox"

const testRef = "drover.local/rootfs/busybox:test"

// requireBusybox skips the test (testenv.Missing) when busybox-static is not installed.
func requireBusybox(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(testBusybox)
	if err != nil {
		testenv.Missing(t, "busybox-static", fmt.Sprintf("%v (apt-get install busybox-static, or scripts/install-deps.sh)", err))
	}
	return data
}

// tarEntry is one entry of a tar read back by a test.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

// readTarEntries reads a tar into a map by name, keeping the order too.
func readTarEntries(t *testing.T, r io.Reader) (map[string]tarEntry, []string) {
	t.Helper()
	out := map[string]tarEntry{}
	var order []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out, order
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NotContains(t, out, hdr.Name, "duplicate entry")
		out[hdr.Name] = tarEntry{hdr: hdr, data: data}
		order = append(order, hdr.Name)
	}
}

// readBlob returns the blob desc points to, checking its digest and size.
func readBlob(t *testing.T, files map[string]tarEntry, desc ocispec.Descriptor) []byte {
	t.Helper()
	e, ok := files["blobs/sha256/"+desc.Digest.Encoded()]
	require.True(t, ok, "blob %s is in the layout", desc.Digest)
	assert.Equal(t, desc.Digest, digest.FromBytes(e.data), "blob digest")
	assert.Equal(t, desc.Size, int64(len(e.data)), "blob size")
	return e.data
}

func TestBusyboxImageLayout(t *testing.T) {
	busybox := requireBusybox(t)
	var buf bytes.Buffer
	require.NoError(t, WriteBusyboxImage(&buf, testBusybox, testRef))
	files, order := readTarEntries(t, &buf)

	assert.Equal(t, []string{"oci-layout", "index.json", "blobs/", "blobs/sha256/"}, order[:4])
	assert.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(files["oci-layout"].data))

	var index ocispec.Index
	require.NoError(t, json.Unmarshal(files["index.json"].data, &index))
	assert.Equal(t, 2, index.SchemaVersion)
	assert.Equal(t, ocispec.MediaTypeImageIndex, index.MediaType)
	require.Len(t, index.Manifests, 1)
	md := index.Manifests[0]
	assert.Equal(t, ocispec.MediaTypeImageManifest, md.MediaType)
	assert.Equal(t, map[string]string{ocispec.AnnotationRefName: testRef, "io.containerd.image.name": testRef}, md.Annotations)
	assert.Equal(t, &ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}, md.Platform)

	var manifest ocispec.Manifest
	require.NoError(t, json.Unmarshal(readBlob(t, files, md), &manifest))
	assert.Equal(t, 2, manifest.SchemaVersion)
	assert.Equal(t, ocispec.MediaTypeImageConfig, manifest.Config.MediaType)
	require.Len(t, manifest.Layers, 1)
	assert.Equal(t, ocispec.MediaTypeImageLayerGzip, manifest.Layers[0].MediaType)
	assert.Len(t, files, 4+3, "layout files plus config, layer and manifest")

	var config ocispec.Image
	require.NoError(t, json.Unmarshal(readBlob(t, files, manifest.Config), &config))
	assert.Equal(t, runtime.GOARCH, config.Architecture)
	assert.Equal(t, "linux", config.OS)
	assert.Equal(t, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, config.Config.Env)
	assert.Equal(t, []string{"sh"}, config.Config.Cmd)
	assert.Equal(t, "", config.Config.User)

	gz, err := gzip.NewReader(bytes.NewReader(readBlob(t, files, manifest.Layers[0])))
	require.NoError(t, err)
	layerTar, err := io.ReadAll(gz)
	require.NoError(t, err)
	assert.Equal(t, "layers", config.RootFS.Type)
	assert.Equal(t, []digest.Digest{digest.FromBytes(layerTar)}, config.RootFS.DiffIDs)

	layer, _ := readTarEntries(t, bytes.NewReader(layerTar))
	bb := layer["bin/busybox"]
	require.NotNil(t, bb.hdr, "bin/busybox is in the layer")
	assert.Equal(t, byte(tar.TypeReg), bb.hdr.Typeflag)
	assert.Equal(t, int64(0o755), bb.hdr.Mode)
	assert.True(t, bytes.Equal(busybox, bb.data), "bin/busybox is the busybox binary")

	out, err := exec.Command(testBusybox, "--list").Output()
	require.NoError(t, err)
	applets := strings.Fields(string(out))
	require.Contains(t, applets, "httpd")
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		e := layer["bin/"+a]
		if assert.NotNil(t, e.hdr, "applet %s", a) {
			assert.Equal(t, byte(tar.TypeSymlink), e.hdr.Typeflag, a)
			assert.Equal(t, "busybox", e.hdr.Linkname, a)
		}
	}

	for name, want := range map[string]struct {
		typ  byte
		mode int64
		uid  int
		link string
	}{
		"tmp/":            {typ: tar.TypeDir, mode: 0o1777},
		"home/vcap/":      {typ: tar.TypeDir, mode: 0o755, uid: 2000},
		"proc/":           {typ: tar.TypeDir, mode: 0o555},
		"sys/":            {typ: tar.TypeDir, mode: 0o555},
		"dev/":            {typ: tar.TypeDir, mode: 0o755},
		"var/www/":        {typ: tar.TypeDir, mode: 0o755},
		"usr/bin":         {typ: tar.TypeSymlink, mode: 0o777, link: "../bin"},
		"sbin":            {typ: tar.TypeSymlink, mode: 0o777, link: "bin"},
		"etc/resolv.conf": {typ: tar.TypeReg, mode: 0o644},
		"etc/hosts":       {typ: tar.TypeReg, mode: 0o644},
	} {
		e := layer[name]
		if assert.NotNil(t, e.hdr, name) {
			assert.Equal(t, want.typ, e.hdr.Typeflag, name)
			assert.Equal(t, want.mode, e.hdr.Mode, name)
			assert.Equal(t, want.uid, e.hdr.Uid, name)
			assert.Equal(t, want.uid, e.hdr.Gid, name)
			assert.Equal(t, want.link, e.hdr.Linkname, name)
			assert.True(t, e.hdr.ModTime.Equal(FixedTime), name)
		}
	}
	assert.Empty(t, layer["etc/resolv.conf"].data)
	assert.Contains(t, string(layer["etc/passwd"].data), "root:x:0:0:")
	assert.Contains(t, string(layer["etc/passwd"].data), "vcap:x:2000:2000:")
	assert.Contains(t, string(layer["etc/passwd"].data), "nobody:x:65534:65534:")
	assert.Contains(t, string(layer["etc/group"].data), "vcap:x:2000:")
	assert.Contains(t, string(layer["etc/hosts"].data), "127.0.0.1\tlocalhost")
}

func TestBusyboxImageIsDeterministic(t *testing.T) {
	requireBusybox(t)
	var a, b, other bytes.Buffer
	require.NoError(t, WriteBusyboxImage(&a, testBusybox, testRef))
	require.NoError(t, WriteBusyboxImage(&b, testBusybox, testRef))
	assert.True(t, bytes.Equal(a.Bytes(), b.Bytes()), "same busybox and ref give the same bytes")
	require.NoError(t, WriteBusyboxImage(&other, testBusybox, "drover.local/rootfs/other:1"))
	assert.False(t, bytes.Equal(a.Bytes(), other.Bytes()), "the ref is part of the image")
}

func TestEnsureBusyboxImage(t *testing.T) {
	requireBusybox(t)
	path := filepath.Join(t.TempDir(), "images", "busybox.tar")
	var want bytes.Buffer
	require.NoError(t, WriteBusyboxImage(&want, testBusybox, testRef))

	require.NoError(t, EnsureBusyboxImage(path, testBusybox, testRef), "missing file is written")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Bytes(), got))
	before, err := os.Stat(path)
	require.NoError(t, err)

	require.NoError(t, EnsureBusyboxImage(path, testBusybox, testRef), "up-to-date file is kept")
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the file was not rewritten")

	require.NoError(t, os.WriteFile(path, []byte("stale"), 0o644))
	require.NoError(t, EnsureBusyboxImage(path, testBusybox, testRef), "stale file is replaced")
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Bytes(), got))

	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temp files left behind")
}

func TestBusyboxImageErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-busybox")
	for _, tc := range []struct {
		name, busybox, ref, err string
	}{
		{name: "missing busybox", busybox: missing, ref: testRef, err: "reading busybox: open " + missing},
		{name: "empty busybox path", busybox: "", ref: testRef, err: "busybox path must not be empty"},
		{name: "not a busybox", busybox: "/bin/false", ref: testRef, err: "listing applets of /bin/false"},
		{name: "empty ref", busybox: testBusybox, ref: "", err: "image ref must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteBusyboxImage(io.Discard, tc.busybox, tc.ref)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestBusyboxTreeRefusesBadApplets(t *testing.T) {
	for _, applet := range []string{"", ".", "..", "a/b", "x\x00"} {
		_, err := BusyboxTree([]byte("bb"), []string{"ls", applet}, VcapUser)
		assert.EqualError(t, err, fmt.Sprintf("invalid busybox applet name %q", applet))
	}
	entries, err := BusyboxTree([]byte("bb"), []string{"sh", "ls", "sh", "busybox"}, VcapUser)
	require.NoError(t, err)
	var links []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name, "bin/") && e.Typeflag == tar.TypeSymlink {
			links = append(links, e.Name)
		}
	}
	assert.Equal(t, []string{"bin/ls", "bin/sh"}, links, "sorted, deduplicated, busybox itself skipped")
}

func TestBusyboxTreeForAnotherUser(t *testing.T) {
	entries, err := BusyboxTree([]byte("bb"), []string{"sh"}, User{Name: "app", ID: 1000})
	require.NoError(t, err)
	byName := map[string]Entry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	home, ok := byName["home/app/"]
	require.True(t, ok, "the user's home")
	assert.Equal(t, [2]int{1000, 1000}, [2]int{home.UID, home.GID})
	assert.NotContains(t, byName, "home/vcap/")
	assert.Contains(t, string(byName["etc/passwd"].Body), "\napp:x:1000:1000:app:/home/app:/bin/sh\n")
	assert.Contains(t, string(byName["etc/group"].Body), "\napp:x:1000:\n")
	assert.NotContains(t, string(byName["etc/passwd"].Body), "vcap")
}

func TestBusyboxTreeRefusesBadUsers(t *testing.T) {
	for _, tc := range []struct {
		user User
		want []string
	}{
		{User{Name: "", ID: 1000}, []string{`name ""`}},
		{User{Name: "a:b", ID: 1000}, []string{`name "a:b"`}},
		{User{Name: "Upper", ID: 1000}, []string{`name "Upper"`}},
		{User{Name: "x\ny", ID: 1000}, []string{`name "x\ny"`}},
		{User{Name: "root", ID: 1000}, []string{`name "root"`, "not be root or nobody"}},
		{User{Name: "nobody", ID: 1000}, []string{`name "nobody"`}},
		{User{Name: "app", ID: 0}, []string{"id 0 must be between 1 and 65533"}},
		{User{Name: "app", ID: 65534}, []string{"id 65534 must be between 1 and 65533"}},
		{User{Name: "", ID: -1}, []string{`name ""`, "id -1 must be"}},
	} {
		_, err := BusyboxTree([]byte("bb"), []string{"sh"}, tc.user)
		require.Error(t, err, "%+v", tc.user)
		assert.ErrorContains(t, err, "invalid busybox tree user: ")
		for _, w := range tc.want {
			assert.ErrorContains(t, err, w, "%+v", tc.user)
		}
	}
}

func TestWriteTarIsDeterministicAndKeepsOrder(t *testing.T) {
	entries := []Entry{
		Dir("app", 0o755).OwnedBy(1000, 1001),
		File("app/x", 0o600, "x\n"),
		Symlink("app/y", "x"),
	}
	a, err := WriteTar(entries)
	require.NoError(t, err)
	b, err := WriteTar(entries)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	tr := tar.NewReader(bytes.NewReader(a))
	for _, want := range entries {
		hdr, err := tr.Next()
		require.NoError(t, err)
		assert.Equal(t, want.Name, hdr.Name)
		assert.Equal(t, want.Typeflag, hdr.Typeflag)
		assert.Equal(t, want.Mode, hdr.Mode)
		assert.Equal(t, want.UID, hdr.Uid)
		assert.Equal(t, want.GID, hdr.Gid)
		assert.Equal(t, want.Link, hdr.Linkname)
		assert.Empty(t, hdr.Uname)
		assert.Empty(t, hdr.Gname)
		assert.True(t, hdr.ModTime.Equal(FixedTime))
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Equal(t, string(want.Body), string(body))
	}
	_, err = tr.Next()
	assert.ErrorIs(t, err, io.EOF)

	_, err = WriteTar([]Entry{File(strings.Repeat("n/", 200)+"f", 0o644, "")})
	assert.ErrorContains(t, err, "layer entry n/n/")
}

// TestImportsAndRunsInContainerd imports the image into containerd and runs it the way
// `ctr images import` and `ctr run --rm` do, through the containerd client.
func TestImportsAndRunsInContainerd(t *testing.T) {
	testenv.RequireRoot(t, "it runs a container in containerd")
	requireBusybox(t)
	script := filepath.Join(repoRoot(t), "scripts", "containerd.sh")
	sockOut, err := exec.Command(script, "socket").Output()
	require.NoError(t, err, "%s socket", script)
	sock := strings.TrimSpace(string(sockOut))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := containerd.New(sock, containerd.WithTimeout(10*time.Second))
	if err == nil {
		t.Cleanup(func() { client.Close() })
		_, err = client.Version(ctx)
	}
	if err != nil {
		testenv.Missing(t, "containerd", fmt.Sprintf("it does not answer at %s (%v): start it with scripts/containerd.sh start", sock, err))
	}

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ns := "drover-rootfs-test-" + hex.EncodeToString(suffix)
	id := "busybox-" + hex.EncodeToString(suffix)
	path := filepath.Join(t.TempDir(), "busybox.tar")
	require.NoError(t, EnsureBusyboxImage(path, testBusybox, testRef))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := executorcontainerd.PurgeNamespace(ctx, sock, ns); err != nil {
			t.Error(err)
		}
	})
	ctx = namespaces.WithNamespace(ctx, ns)

	f, err := os.Open(path)
	require.NoError(t, err)
	imported, err := client.Import(ctx, f)
	f.Close()
	require.NoError(t, err)
	var names []string
	for _, img := range imported {
		names = append(names, img.Name)
	}
	assert.Equal(t, []string{testRef}, names, "the image is named by its annotation")
	img, err := client.GetImage(ctx, testRef)
	require.NoError(t, err)
	require.NoError(t, img.Unpack(ctx, executorcontainerd.DefaultSnapshotter))

	c, err := client.NewContainer(ctx, id,
		containerd.WithSnapshotter(executorcontainerd.DefaultSnapshotter),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs(
			"sh", "-c", `echo "$PATH"; ls -ld /tmp /home/vcap; /usr/bin/env true && echo env-ok; grep ^vcap: /etc/passwd`)))
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	task, err := c.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, &stdout, &stderr)))
	require.NoError(t, err)
	exited, err := task.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, task.Start(ctx))
	status := <-exited
	_, err = task.Delete(ctx) // waits for the output to be copied
	require.NoError(t, err)
	require.NoError(t, status.Error())
	require.Equal(t, uint32(0), status.ExitCode(), "stdout: %s\nstderr: %s", &stdout, &stderr)

	out := stdout.String()
	assert.Contains(t, out, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	assert.Regexp(t, `drwxrwxrwt .* /tmp`, out)
	assert.Regexp(t, `drwxr-xr-x .* vcap +vcap .* /home/vcap`, out)
	assert.Contains(t, out, "env-ok")
	assert.Contains(t, out, "vcap:x:2000:2000:")
}

// repoRoot is the workspace root (where go.work is).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "go.work not found above the test's directory")
		dir = parent
	}
}
