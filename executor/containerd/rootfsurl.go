package containerd

import (
	"fmt"
	"net/url"
	"strings"

	"drover.dev/executor"
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
	// Name is the preloaded name, or the registry image reference to pull.
	Name string
}

// parseRootFS maps a rootfs URL onto what this cell can run: preloaded:NAME for a
// configured name, or SCHEME://host/repo#tag for an arbitrary scheme (Diego's docker URL:
// an empty host means docker.io, the fragment is the tag). Anything else wraps
// executor.ErrUnsupportedRootFS.
func parseRootFS(raw string, preloaded map[string]string, schemes []string) (rootFSRef, error) {
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
			ref, err := dockerReference(raw)
			if err != nil {
				return rootFSRef{}, fmt.Errorf("%w: %v", executor.ErrUnsupportedRootFS, err)
			}
			return rootFSRef{Kind: rootFSRegistry, Name: ref}, nil
		}
	}
	return rootFSRef{}, fmt.Errorf("%w: scheme %q", executor.ErrUnsupportedRootFS, scheme)
}

// dockerReference turns docker:///repo#tag or docker://registry/repo#tag (also with a
// :tag in the path) into a fully qualified image reference.
func dockerReference(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid rootfs url %q: %v", raw, err)
	}
	repo := strings.Trim(u.Path, "/")
	if repo == "" {
		return "", fmt.Errorf("rootfs url %q names no image", raw)
	}
	host := u.Host
	if host == "" || host == "index.docker.io" || host == "registry-1.docker.io" {
		host = "docker.io"
		if !strings.Contains(repo, "/") {
			repo = "library/" + repo
		}
	}
	ref := host + "/" + repo
	switch {
	case u.Fragment != "":
		ref += ":" + u.Fragment
	case strings.Contains(repo, "@") || strings.Contains(repo[strings.LastIndex(repo, "/")+1:], ":"):
	default:
		ref += ":latest"
	}
	return ref, nil
}
