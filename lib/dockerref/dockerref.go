// Package dockerref parses the docker root filesystem URLs of Diego's LRP API
// (docker:///user/image#tag, docker://registry.host:5000/user/image@sha256:...) and
// docker-style image names (registry.host:5000/user/image:tag), and turns them into the
// full references containerd and registry clients take. The reference grammar (host,
// repository, tag, digest) is github.com/distribution/reference's and
// github.com/opencontainers/go-digest's; this package adds the URL shape, the bounds,
// and errors that name the broken rule. It does no I/O.
package dockerref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Scheme is the URL scheme of a docker rootfs, without the colon.
const Scheme = "docker"

// MaxLength bounds a docker URL or image name, in bytes.
const MaxLength = 1024

// DockerHub is the registry host for which a one-component repository gets the
// "library/" prefix, as the Docker CLI and Cloud Controller do.
const DockerHub = "docker.io"

// DefaultTag is the tag a reference without a tag or digest resolves to.
const DefaultTag = "latest"

// ErrInvalid is wrapped by every error Parse and ParseImage return.
var ErrInvalid = errors.New("invalid docker image reference")

// Error is a refused docker URL or image name. Rule says which rule was broken, in
// words meant for the person who wrote the URL. It never repeats the input, which may
// hold credentials.
type Error struct {
	Rule string
}

func (e *Error) Error() string { return ErrInvalid.Error() + ": " + e.Rule }

// Unwrap lets errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

func invalid(format string, args ...any) error {
	return &Error{Rule: fmt.Sprintf(format, args...)}
}

// urlShape is what a docker URL looks like; it ends the rules that concern the shape.
const urlShape = "want docker://[HOST[:PORT]]/REPOSITORY[:TAG|#TAG][@sha256:HEX]"

// Ref is a parsed docker image reference. Registry is empty when the URL names no host
// (docker:///repo): the caller's default registry applies. Tag and Digest are empty when
// not given; Digest is "sha256:HEX".
type Ref struct {
	Registry   string
	Repository string
	Tag        string
	Digest     string
}

var anchoredDomain = regexp.MustCompile(`^(?:` + reference.DomainRegexp.String() + `)$`)

// IsDocker reports whether a rootfs URL has the docker scheme (any letter case), that is
// whether Parse is the rule for it.
func IsDocker(rootfs string) bool {
	return len(rootfs) >= len(Scheme)+1 && strings.EqualFold(rootfs[:len(Scheme)+1], Scheme+":")
}

// Parse parses a docker rootfs URL: docker://[HOST[:PORT]]/REPOSITORY with the tag as
// the fragment (#TAG) or after a colon (:TAG), and an optional digest after an at sign
// (@sha256:HEX). An empty host means the caller's default registry.
func Parse(raw string) (Ref, error) {
	if err := checkChars(raw); err != nil {
		return Ref{}, err
	}
	if !IsDocker(raw) {
		return Ref{}, invalid("the scheme must be docker: (%s)", urlShape)
	}
	if !strings.HasPrefix(raw, Scheme+":") {
		return Ref{}, invalid("the scheme must be lowercase docker: (%s)", urlShape)
	}
	rest, ok := strings.CutPrefix(raw, Scheme+"://")
	if !ok {
		return Ref{}, invalid("docker: must be followed by // (%s)", urlShape)
	}
	if rest == "" {
		return Ref{}, invalid("nothing after docker:// (%s)", urlShape)
	}
	if strings.Contains(rest, "?") {
		return Ref{}, invalid("a query string (?) is not allowed in a docker URL")
	}
	rest, fragment, hasFragment := strings.Cut(rest, "#")
	if hasFragment {
		switch {
		case fragment == "":
			return Ref{}, invalid("the tag after # is empty")
		case strings.Contains(fragment, "#"):
			return Ref{}, invalid("only one # (the tag) is allowed")
		case strings.Contains(fragment, ":"):
			return Ref{}, invalid("the tag after # cannot hold a colon; a digest goes in the path: docker://HOST/REPOSITORY@sha256:HEX")
		}
	}
	host, path, hasPath := strings.Cut(rest, "/")
	if strings.Contains(host, "@") {
		return Ref{}, invalid("credentials in the URL (user@host) are not allowed; use image_username and image_password")
	}
	if !hasPath || path == "" {
		return Ref{}, invalid("the repository is empty (%s)", urlShape)
	}
	ref, err := parseRepoPart(host, path)
	if err != nil {
		return Ref{}, err
	}
	if hasFragment {
		if ref.Tag != "" {
			return Ref{}, invalid("the tag is given twice (:TAG in the path and #TAG)")
		}
		if err := checkTag(fragment); err != nil {
			return Ref{}, err
		}
		ref.Tag = fragment
	}
	return ref, nil
}

// ParseImage parses a docker-style image name as `docker pull` takes it:
// [HOST[:PORT]/]REPOSITORY[:TAG][@sha256:HEX]. The first path component is a host when it
// holds a dot or a colon or is "localhost"; otherwise Registry is empty (the caller's
// default registry applies). Unlike docker it adds no docker.io and no library/.
// A docker:// URL is parsed with Parse.
func ParseImage(image string) (Ref, error) {
	if err := checkChars(image); err != nil {
		return Ref{}, err
	}
	if IsDocker(image) {
		return Parse(image)
	}
	if strings.Contains(image, "://") {
		return Ref{}, invalid("an image name has no scheme other than docker:// (want [HOST[:PORT]/]REPOSITORY[:TAG][@sha256:HEX])")
	}
	if image == "" {
		return Ref{}, invalid("the image name is empty")
	}
	first, rest, ok := strings.Cut(image, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if strings.Contains(first, "@") {
			return Ref{}, invalid("credentials in the image name (user@host) are not allowed")
		}
		if rest == "" {
			return Ref{}, invalid("the repository is empty (want [HOST[:PORT]/]REPOSITORY[:TAG][@sha256:HEX])")
		}
		return parseRepoPart(first, rest)
	}
	return parseRepoPart("", image)
}

// parseRepoPart parses REPOSITORY[:TAG][@DIGEST] under an optional host.
func parseRepoPart(host, path string) (Ref, error) {
	if host != "" && !anchoredDomain.MatchString(host) {
		return Ref{}, invalid("the registry host must be HOST[:PORT] with a DNS name, an IPv4 address or a [bracketed] IPv6 address")
	}
	ref := Ref{Registry: host}
	name := path
	if i := strings.LastIndexByte(path, '@'); i >= 0 {
		name = path[:i]
		d, err := digest.Parse(path[i+1:])
		if err != nil || d.Algorithm() != digest.SHA256 {
			return Ref{}, invalid("the digest must be sha256:<64 lowercase hex>")
		}
		ref.Digest = d.String()
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "/") {
		tag := name[i+1:]
		name = name[:i]
		if err := checkTag(tag); err != nil {
			return Ref{}, err
		}
		ref.Tag = tag
	}
	if err := checkRepository(name); err != nil {
		return Ref{}, err
	}
	ref.Repository = name
	return ref, nil
}

// placeholderDomain lets the grammar see name as a repository path only, never as a
// domain followed by a path.
const placeholderDomain = "registry.invalid"

func checkRepository(name string) error {
	if name == "" {
		return invalid("the repository is empty (%s)", urlShape)
	}
	named, err := reference.WithName(placeholderDomain + "/" + name)
	switch {
	case errors.Is(err, reference.ErrNameTooLong):
		return invalid("the repository is longer than %d characters", reference.RepositoryNameTotalLengthMax)
	case err != nil || reference.Domain(named) != placeholderDomain || reference.Path(named) != name:
		if name != strings.ToLower(name) {
			return invalid("the repository must be lowercase")
		}
		return invalid("the repository must be lowercase letters, digits and separators (. _ __ -) between slash-separated components, with no empty component")
	}
	return nil
}

var anchoredTag = regexp.MustCompile(`^(?:` + reference.TagRegexp.String() + `)$`)

func checkTag(tag string) error {
	if !anchoredTag.MatchString(tag) {
		return invalid("the tag must be 1 to 128 characters of letters, digits, _ . - and not start with . or -")
	}
	return nil
}

// checkChars bounds the input and refuses spaces, control and non-ASCII characters,
// before any rule looks at the parts.
func checkChars(s string) error {
	if len(s) > MaxLength {
		return invalid("longer than %d bytes", MaxLength)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return invalid("only printable ASCII characters without spaces are allowed")
		}
	}
	return nil
}

// String returns the canonical docker URL of r: docker://HOST/REPOSITORY[@DIGEST][#TAG],
// with an empty host when Registry is empty. Parse(r.String()) gives r back.
func (r Ref) String() string {
	var b strings.Builder
	b.WriteString(Scheme + "://")
	b.WriteString(r.Registry)
	b.WriteByte('/')
	b.WriteString(r.Repository)
	if r.Digest != "" {
		b.WriteByte('@')
		b.WriteString(r.Digest)
	}
	if r.Tag != "" {
		b.WriteByte('#')
		b.WriteString(r.Tag)
	}
	return b.String()
}

// RegistryOr returns the registry host r names, or def when it names none. This is the
// host whose credentials and insecure (plain HTTP) setting apply.
func (r Ref) RegistryOr(def string) string {
	if r.Registry != "" {
		return r.Registry
	}
	return def
}

// Pinned reports whether r names a digest, so that it always means the same image.
func (r Ref) Pinned() bool { return r.Digest != "" }

// WithDefaultRegistry returns the full reference of r for containerd and registry
// clients: HOST/REPOSITORY:TAG, HOST/REPOSITORY@DIGEST or HOST/REPOSITORY:TAG@DIGEST,
// where HOST is r's registry or def when r names none. Without tag or digest the tag is
// "latest". On docker.io (and index.docker.io) a one-component repository gets the
// "library/" prefix.
func (r Ref) WithDefaultRegistry(def string) string {
	host := r.RegistryOr(def)
	repo := r.Repository
	if (host == DockerHub || host == "index."+DockerHub) && !strings.Contains(repo, "/") {
		repo = "library/" + repo
	}
	s := host + "/" + repo
	switch {
	case r.Tag != "":
		s += ":" + r.Tag
	case r.Digest == "":
		s += ":" + DefaultTag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// WithDigest returns r pinned to the digest d (sha256:HEX), keeping its registry and
// repository and dropping its tag, as the URL of an image resolved once and run many times.
func (r Ref) WithDigest(d string) (Ref, error) {
	parsed, err := digest.Parse(d)
	if err != nil || parsed.Algorithm() != digest.SHA256 {
		return Ref{}, invalid("the digest must be sha256:<64 lowercase hex>")
	}
	return Ref{Registry: r.Registry, Repository: r.Repository, Digest: parsed.String()}, nil
}
