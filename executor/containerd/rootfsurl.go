package containerd

import (
	"fmt"
	"strings"

	"drover.dev/executor"
	"drover.dev/lib/dockerref"
)

// rootFSKind is how a rootfs URL is provided.
type rootFSKind int

const (
	rootFSPreloaded rootFSKind = iota + 1
	rootFSRegistry
)

// rootFSRef is a parsed rootfs URL.
type rootFSRef struct {
	Kind rootFSKind
	// Name is the preloaded name, or the full registry reference to pull
	// (HOST/REPOSITORY:TAG or HOST/REPOSITORY@DIGEST).
	Name string
	// Registry is the HOST[:PORT] a registry image comes from.
	Registry string
}

// parseRootFS maps a rootfs URL onto what this cell can run: preloaded:NAME for a
// configured name, or a docker URL (docker://HOST/REPOSITORY#TAG, docker:///REPOSITORY
// for defaultRegistry, @sha256:HEX for a digest) when its scheme is one of schemes.
// Anything else wraps executor.ErrUnsupportedRootFS.
func parseRootFS(raw string, preloaded map[string]string, schemes []string, defaultRegistry string) (rootFSRef, error) {
	if len(raw) > dockerref.MaxLength {
		return rootFSRef{}, fmt.Errorf("%w: longer than %d bytes", executor.ErrUnsupportedRootFS, dockerref.MaxLength)
	}
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok {
		return rootFSRef{}, fmt.Errorf("%w: %q has no scheme", executor.ErrUnsupportedRootFS, raw)
	}
	if scheme == "preloaded" {
		if _, ok := preloaded[rest]; !ok {
			return rootFSRef{}, fmt.Errorf("%w: no preloaded rootfs named %q", executor.ErrUnsupportedRootFS, rest)
		}
		return rootFSRef{Kind: rootFSPreloaded, Name: rest}, nil
	}
	for _, s := range schemes {
		if s == scheme {
			ref, err := dockerref.Parse(raw)
			if err != nil {
				return rootFSRef{}, fmt.Errorf("%w: rootfs %q: %v", executor.ErrUnsupportedRootFS, raw, err)
			}
			return rootFSRef{
				Kind:     rootFSRegistry,
				Name:     ref.WithDefaultRegistry(defaultRegistry),
				Registry: ref.RegistryOr(defaultRegistry),
			}, nil
		}
	}
	return rootFSRef{}, fmt.Errorf("%w: scheme %q", executor.ErrUnsupportedRootFS, scheme)
}
