package containerd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// maxImageConfigBytes bounds the image config blob read from the content store.
const maxImageConfigBytes = 4 << 20

// defaultPathEnv is the env of an image that sets none (as in Docker and containerd).
const defaultPathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageMeta is what a container keeps of its image's config: processes default to the
// image's USER and WORKDIR, and Entrypoint, Cmd and ExposedPorts describe it.
type imageMeta struct {
	User         string   `json:"user,omitempty"`
	WorkingDir   string   `json:"working_dir,omitempty"`
	Entrypoint   []string `json:"entrypoint,omitempty"`
	Cmd          []string `json:"cmd,omitempty"`
	ExposedPorts []string `json:"exposed_ports,omitempty"`
	// Env is the image's env (or the default PATH), the base of the container env.
	Env []string `json:"-"`
}

// readImageConfig reads the config of img from the content store.
func readImageConfig(ctx context.Context, img containerd.Image) (imageMeta, error) {
	desc, err := img.Config(ctx)
	if err != nil {
		return imageMeta{}, fmt.Errorf("image %s: config: %w", img.Name(), err)
	}
	if desc.Size > maxImageConfigBytes {
		return imageMeta{}, fmt.Errorf("image %s: config of %d bytes is larger than %d", img.Name(), desc.Size, maxImageConfigBytes)
	}
	raw, err := content.ReadBlob(ctx, img.ContentStore(), desc)
	if err != nil {
		return imageMeta{}, fmt.Errorf("image %s: read config: %w", img.Name(), err)
	}
	return parseImageConfig(raw)
}

// parseImageConfig extracts the container defaults from an OCI image config.
func parseImageConfig(raw []byte) (imageMeta, error) {
	var img ocispec.Image
	if err := json.Unmarshal(raw, &img); err != nil {
		return imageMeta{}, fmt.Errorf("image config: %w", err)
	}
	c := img.Config
	m := imageMeta{
		User:       strings.TrimSpace(c.User),
		WorkingDir: c.WorkingDir,
		Entrypoint: c.Entrypoint,
		Cmd:        c.Cmd,
		Env:        c.Env,
	}
	for p := range c.ExposedPorts {
		m.ExposedPorts = append(m.ExposedPorts, p)
	}
	slices.Sort(m.ExposedPorts)
	if len(m.Env) == 0 {
		m.Env = []string{defaultPathEnv}
	}
	return m, nil
}

// withImageEnv puts the image's env over the spec's defaults; the container spec's env,
// applied after it, overrides it name by name.
func withImageEnv(env []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			return fmt.Errorf("spec has no process")
		}
		s.Process.Env = mergeEnv(s.Process.Env, env)
		return nil
	}
}

// processDefaults fills in the user and working dir a process does not name from its
// container's image.
func processDefaults(user, dir string, img imageMeta) (string, string) {
	if user == "" {
		user = img.User
	}
	if dir == "" {
		dir = img.WorkingDir
	}
	return user, dir
}
