// Package images builds the container images of drover's dev stack and test suite from
// the host's busybox-static binary, never downloading one: drover/web (a tiny HTTP
// server that reports the image's ENV, its user and its working directory, in versions
// v1 and v2) and drover/layers (several layers, a file changed in a later layer, a
// whiteout deleting another). Every timestamp is fixed, so a build gives the same
// digests every time; a Salt makes an image whose every blob is new (for tests that
// count registry fetches). Push writes images into a registry
// (github.com/google/go-containerregistry).
package images

import (
	"bytes"
	"fmt"
	"io"
	"runtime"

	"drover.dev/executor/rootfs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Repositories and tags of the images.
const (
	WebRepository    = "drover/web"
	LayersRepository = "drover/layers"
	// WebPort is the port drover/web listens on and exposes.
	WebPort = 8080
	// AppUID is the uid (and gid) of the "app" user drover/web runs as.
	AppUID = 1000
	// WebWorkdir is drover/web's working directory.
	WebWorkdir = "/app"
	// WebGreeting is the GREETING drover/web's ENV sets.
	WebGreeting = "hello-from-the-image"
)

// WebVersions are the tags of drover/web that Standard builds.
var WebVersions = []string{"v1", "v2"}

// Options shape one build.
type Options struct {
	// BusyboxPath is the static busybox binary (default /usr/bin/busybox, Debian's
	// busybox-static).
	BusyboxPath string
	// Salt, when set, is written into every layer, so that every blob of the image is
	// one no registry or content store has seen.
	Salt string
}

// DefaultBusybox is Debian busybox-static's binary.
const DefaultBusybox = "/usr/bin/busybox"

func (o Options) busybox() string {
	if o.BusyboxPath == "" {
		return DefaultBusybox
	}
	return o.BusyboxPath
}

// Web builds drover/web at version (v1, v2, ...): the busybox base layer and an app layer
// with /app/start.sh, which writes a page holding "drover/web VERSION", GREETING, COLOR,
// `id -u`, `id -g`, the working directory and its arguments, then serves it with busybox
// httpd on the port its first argument names. ENTRYPOINT ["/app/start.sh"], CMD
// ["8080"], ENV GREETING, COLOR=blue and VERSION, WORKDIR /app, USER 1000 (named "app"
// in /etc/passwd), EXPOSE 8080/tcp.
func Web(version string, opts Options) (v1.Image, error) {
	if version == "" {
		return nil, fmt.Errorf("web image: empty version")
	}
	base, err := baseLayer(opts)
	if err != nil {
		return nil, err
	}
	app := []rootfs.Entry{
		rootfs.Dir("app", 0o755).OwnedBy(AppUID, AppUID),
		rootfs.File("app/VERSION", 0o644, version+"\n"),
		rootfs.File("app/start.sh", 0o755, startScript),
	}
	if opts.Salt != "" {
		app = append(app, rootfs.File("app/.salt", 0o644, opts.Salt+"\n"))
	}
	cfg := v1.Config{
		Entrypoint:   []string{"/app/start.sh"},
		Cmd:          []string{fmt.Sprint(WebPort)},
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin", "GREETING=" + WebGreeting, "COLOR=blue", "VERSION=" + version},
		WorkingDir:   WebWorkdir,
		User:         fmt.Sprint(AppUID),
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", WebPort): {}},
		Labels:       map[string]string{"org.opencontainers.image.title": WebRepository, "org.opencontainers.image.version": version},
	}
	return build(cfg, []layerSpec{
		{entries: base, createdBy: "busybox-static base"},
		{entries: app, createdBy: "drover/web " + version},
	})
}

// startScript is drover/web's entrypoint.
const startScript = `#!/bin/sh
# drover/web: serve a page that says which version runs, with which environment,
# as which user and where, on port $1 (default 8080).
port=${1:-8080}
mkdir -p /tmp/www || exit 1
{
  echo "drover/web $(cat /app/VERSION)"
  echo "greeting=$GREETING"
  echo "color=$COLOR"
  echo "uid=$(id -u)"
  echo "gid=$(id -g)"
  echo "workdir=$(pwd)"
  echo "args=$*"
} > /tmp/www/index.html || exit 1
echo "drover/web $(cat /app/VERSION) listening on $port as uid $(id -u) in $(pwd)"
exec httpd -f -p "$port" -h /tmp/www
`

// Layers builds drover/layers: the busybox base layer, then a layer adding
// /data/a.txt ("a from layer 2"), /data/gone.txt and /data/keep.txt, then a layer
// changing /data/a.txt ("a from layer 3") and deleting /data/gone.txt with a whiteout
// (.wh.gone.txt). CMD lists /data and prints a.txt; WORKDIR /data, USER root.
func Layers(opts Options) (v1.Image, error) {
	base, err := baseLayer(opts)
	if err != nil {
		return nil, err
	}
	second := []rootfs.Entry{
		rootfs.Dir("data", 0o755),
		rootfs.File("data/a.txt", 0o644, "a from layer 2\n"),
		rootfs.File("data/gone.txt", 0o644, "deleted by layer 3\n"),
		rootfs.File("data/keep.txt", 0o644, "kept from layer 2\n"),
	}
	third := []rootfs.Entry{
		rootfs.Dir("data", 0o755),
		rootfs.File("data/a.txt", 0o644, "a from layer 3\n"),
		rootfs.File("data/.wh.gone.txt", 0o644, ""),
	}
	if opts.Salt != "" {
		second = append(second, rootfs.File("data/.salt2", 0o644, opts.Salt+"\n"))
		third = append(third, rootfs.File("data/.salt3", 0o644, opts.Salt+"\n"))
	}
	cfg := v1.Config{
		Cmd:        []string{"/bin/sh", "-c", "ls /data; cat /data/a.txt"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		WorkingDir: "/data",
		User:       "0",
	}
	return build(cfg, []layerSpec{
		{entries: base, createdBy: "busybox-static base"},
		{entries: second, createdBy: "data: a.txt, gone.txt, keep.txt"},
		{entries: third, createdBy: "data: change a.txt, delete gone.txt"},
	})
}

// baseLayer is the busybox tree of the cell's own image (rootfs.BusyboxTree) made for
// the user app (AppUID): busybox with a symlink per applet, merged-usr links,
// /etc/passwd and /etc/group naming root and app, /tmp, and the salt when there is one.
func baseLayer(opts Options) ([]rootfs.Entry, error) {
	busybox, applets, err := rootfs.ReadBusybox(opts.busybox())
	if err != nil {
		return nil, err
	}
	entries, err := rootfs.BusyboxTree(busybox, applets, rootfs.User{Name: "app", ID: AppUID})
	if err != nil {
		return nil, err
	}
	if opts.Salt != "" {
		entries = append(entries, rootfs.File("etc/drover-salt", 0o644, opts.Salt+"\n"))
	}
	return entries, nil
}

// layerSpec is one layer to build and the history line that describes it.
type layerSpec struct {
	entries   []rootfs.Entry
	createdBy string
}

// build stacks the layers on an empty OCI image and sets cfg, linux on this machine's
// architecture, and fixed times.
func build(cfg v1.Config, specs []layerSpec) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, spec := range specs {
		data, err := rootfs.WriteTar(spec.entries)
		if err != nil {
			return nil, err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: rootfs.FixedTime}, CreatedBy: spec.createdBy},
		})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config = cfg
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: rootfs.FixedTime}
	return mutate.ConfigFile(img, cf)
}
