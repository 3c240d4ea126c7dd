package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"

	"drover.dev/lib/testenv"
)

func requireBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(DefaultBusybox); err != nil {
		testenv.Missing(t, "busybox-static", fmt.Sprintf("%v: install it with scripts/install-deps.sh", err))
	}
}

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

// flatten returns the files of img's merged filesystem (whiteouts applied) by name.
func flatten(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[hdr.Name] = string(body)
	}
}

func TestBuildsAreReproducible(t *testing.T) {
	requireBusybox(t)
	a, err := Web("v1", Options{})
	require.NoError(t, err)
	b, err := Web("v1", Options{})
	require.NoError(t, err)
	require.Equal(t, digest(t, a), digest(t, b), "two builds of drover/web:v1 have one digest")

	v2, err := Web("v2", Options{})
	require.NoError(t, err)
	require.NotEqual(t, digest(t, a), digest(t, v2))
	la, err := a.Layers()
	require.NoError(t, err)
	lb, err := v2.Layers()
	require.NoError(t, err)
	da, _ := la[0].Digest()
	db, _ := lb[0].Digest()
	require.Equal(t, da, db, "v1 and v2 share the base layer")

	salted, err := Web("v1", Options{Salt: "x"})
	require.NoError(t, err)
	ls, err := salted.Layers()
	require.NoError(t, err)
	for i, l := range ls {
		d1, _ := l.Digest()
		d2, _ := la[i].Digest()
		require.NotEqual(t, d1, d2, "a salted image shares no layer (layer %d)", i)
	}
}

func TestWebImageConfig(t *testing.T) {
	requireBusybox(t)
	img, err := Web("v1", Options{})
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, []string{"/app/start.sh"}, cf.Config.Entrypoint)
	require.Equal(t, []string{"8080"}, cf.Config.Cmd)
	require.Contains(t, cf.Config.Env, "GREETING="+WebGreeting)
	require.Equal(t, "/app", cf.Config.WorkingDir)
	require.Equal(t, "1000", cf.Config.User)
	require.Contains(t, cf.Config.ExposedPorts, "8080/tcp")
	require.Equal(t, "linux", cf.OS)
	files := flatten(t, img)
	require.Contains(t, files["etc/passwd"], "app:x:1000:1000:")
	require.Equal(t, "v1\n", files["app/VERSION"])
	require.Contains(t, files, "bin/busybox")
	require.Contains(t, files, "bin/httpd")
}

func TestLayersImageAppliesTheLaterLayerAndTheWhiteout(t *testing.T) {
	requireBusybox(t)
	img, err := Layers(Options{})
	require.NoError(t, err)
	ls, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, ls, 3)
	files := flatten(t, img)
	require.Equal(t, "a from layer 3\n", files["data/a.txt"])
	require.Equal(t, "kept from layer 2\n", files["data/keep.txt"])
	require.NotContains(t, files, "data/gone.txt")
	require.NotContains(t, files, "data/.wh.gone.txt")
}

func TestWebRefusesAnEmptyVersion(t *testing.T) {
	_, err := Web("", Options{})
	require.ErrorContains(t, err, "empty version")
}
