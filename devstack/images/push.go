package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Target is a registry to push into.
type Target struct {
	// Host is host:port of the registry.
	Host string
	// PlainHTTP is true for a registry without TLS.
	PlainHTTP bool
	// CAFile, when set, is the PEM CA the registry's certificate is checked against.
	CAFile string
	// Username and Password, when set, authenticate with basic auth.
	Username, Password string
}

// Ref is the docker-style image name host/repository:tag.
func (t Target) Ref(repository, tag string) string { return t.Host + "/" + repository + ":" + tag }

// pushTimeout bounds one Push.
const pushTimeout = 2 * time.Minute

// Push writes img into the target as repository:tag and returns its manifest digest
// ("sha256:...").
func Push(ctx context.Context, t Target, repository, tag string, img v1.Image) (string, error) {
	var nameOpts []name.Option
	if t.PlainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.NewTag(t.Ref(repository, tag), nameOpts...)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", t.Ref(repository, tag), err)
	}
	transport, err := t.transport()
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if t.Username != "" {
		auth = &authn.Basic{Username: t.Username, Password: t.Password}
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(transport)); err != nil {
		// The registry's answer, never the credentials.
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// transport is an HTTP transport trusting CAFile (when set) besides the system roots.
func (t Target) transport() (http.RoundTripper, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if t.CAFile == "" {
		return tr, nil
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("registry CA: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("registry CA: " + t.CAFile + " holds no PEM certificate")
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

// Named is an image with its repository and tag.
type Named struct {
	Repository, Tag string
	Image           v1.Image
}

// Standard builds the images the dev stack's registries hold: drover/web:v1,
// drover/web:v2 and drover/layers:v1.
func Standard(opts Options) ([]Named, error) {
	var out []Named
	for _, v := range WebVersions {
		img, err := Web(v, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, Named{Repository: WebRepository, Tag: v, Image: img})
	}
	img, err := Layers(opts)
	if err != nil {
		return nil, err
	}
	return append(out, Named{Repository: LayersRepository, Tag: "v1", Image: img}), nil
}

// PushAll pushes images into the target and returns each one's manifest digest by
// repository:tag.
func PushAll(ctx context.Context, t Target, images []Named) (map[string]string, error) {
	digests := map[string]string{}
	for _, n := range images {
		d, err := Push(ctx, t, n.Repository, n.Tag, n.Image)
		if err != nil {
			return nil, err
		}
		digests[n.Repository+":"+n.Tag] = d
	}
	return digests, nil
}

// SortedRefs lists the keys of a PushAll result in order, for people.
func SortedRefs(digests map[string]string) []string {
	out := make([]string, 0, len(digests))
	for k := range digests {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
