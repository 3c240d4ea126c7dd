package containerd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/reference"
	"github.com/containerd/containerd/remotes"
	"github.com/containerd/log"
	"github.com/opencontainers/go-digest"
	"github.com/sirupsen/logrus"
)

// Labels on images pulled from a registry.
const (
	// sourceLabel is "registry" on pulled images: only those are garbage-collected.
	sourceLabel    = "drover.dev/source"
	sourceRegistry = "registry"
	// pulledAsLabel is the reference (HOST/REPOSITORY:TAG) an image was first pulled for.
	pulledAsLabel = "drover.dev/pulled-as"
)

// quietLogger silences the containerd client's own (logrus) lines during pulls: the
// runtime logs each pull's outcome with slog.
var quietLogger = func() *log.Entry {
	l := logrus.New()
	l.Out = io.Discard
	return logrus.NewEntry(l)
}()

// maxPullConcurrency bounds the layers of one pull fetched at once.
const maxPullConcurrency = 3

// key identifies the credentials in memory (to keep pulls with different credentials
// apart) without holding them.
func (c registryCreds) key() string {
	if c.Username == "" && c.Password == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(c.Username + "\x00" + c.Password))
	return hex.EncodeToString(sum[:])
}

// registryImage resolves ref (its tag, or its digest) with creds on the registry, pulls
// the image it names unless the cell has it, and returns it pinned to the digest and
// marked in use until release is called (the image GC leaves it alone until then).
// Concurrent calls for one image share one resolve and one pull.
func (r *Runtime) registryImage(ctx context.Context, ref rootFSRef, creds registryCreds) (_ containerd.Image, release func(), _ error) {
	var lastErr error
	for range 2 {
		pinned, err := r.resolveAndPull(ctx, ref, creds)
		if err != nil {
			return nil, nil, err
		}
		release := r.useImage(pinned)
		img, err := r.client.GetImage(ctx, pinned)
		if err == nil {
			err = r.ensureUnpacked(ctx, img)
		}
		if err == nil {
			return img, release, nil
		}
		// Collected between the pull and its use: pull again, once.
		release()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("image %s: %w", ref.Name, lastErr)
}

// resolveAndPull returns the pinned name (HOST/REPOSITORY@DIGEST) of ref once the
// image is in the cell. Callers with the same reference and credentials share one
// attempt, which runs on the runtime's context bounded by the pull timeout: a caller
// that gives up does not cancel it for the others.
func (r *Runtime) resolveAndPull(ctx context.Context, ref rootFSRef, creds registryCreds) (string, error) {
	key := "resolve\x00" + ref.Name + "\x00" + creds.key()
	ch := r.pulls.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(log.WithLogger(r.ctx, quietLogger), r.cfg.Registry.PullTimeout)
		defer cancel()
		return r.resolvePinned(fctx, ref, creds)
	})
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("pull image %s: %w", ref.Name, ctx.Err())
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	}
}

// resolvePinned asks the registry for the digest ref names now, and pulls that digest
// once per cell.
func (r *Runtime) resolvePinned(ctx context.Context, ref rootFSRef, creds registryCreds) (string, error) {
	resolver := r.registry.resolver(creds)
	_, desc, err := resolver.Resolve(ctx, ref.Name)
	if err != nil {
		return "", classifyPullError(ref.Name, ref.Registry, err)
	}
	pinned, err := pinnedName(ref.Name, desc.Digest)
	if err != nil {
		return "", &PullError{Image: ref.Name, Registry: ref.Registry, Reason: "bad reference", Detail: cutDetail(err.Error())}
	}
	ch := r.pulls.DoChan("pull\x00"+pinned, func() (any, error) {
		return pinned, r.pullPinned(ctx, ref, pinned, resolver)
	})
	select {
	case <-ctx.Done():
		return "", classifyPullError(ref.Name, ref.Registry, ctx.Err())
	case res := <-ch:
		return pinned, res.Err
	}
}

// pullPinned pulls pinned and unpacks it into the snapshotter, unless it is there.
func (r *Runtime) pullPinned(ctx context.Context, ref rootFSRef, pinned string, resolver remotes.Resolver) error {
	img, err := r.client.GetImage(ctx, pinned)
	switch {
	case err == nil:
		return r.ensureUnpacked(ctx, img)
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("look up image %s: %w", pinned, err)
	}
	started := time.Now()
	_, err = r.client.Pull(ctx, pinned,
		containerd.WithResolver(resolver),
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(r.cfg.Snapshotter),
		containerd.WithMaxConcurrentDownloads(maxPullConcurrency),
		containerd.WithPullLabels(map[string]string{
			ownerLabel:    r.cfg.Namespace,
			sourceLabel:   sourceRegistry,
			pulledAsLabel: ref.Name,
		}))
	if err != nil {
		r.logger.Warn("image-pull-failed", "image", ref.Name, "registry", ref.Registry, "error", err)
		return classifyPullError(ref.Name, ref.Registry, err)
	}
	r.logger.Info("image-pulled", "image", ref.Name, "pinned", pinned, "duration", time.Since(started))
	return nil
}

// pinnedName is name (HOST/REPOSITORY[:TAG][@DIGEST]) pinned to d: HOST/REPOSITORY@d.
func pinnedName(name string, d digest.Digest) (string, error) {
	spec, err := reference.Parse(name)
	if err != nil {
		return "", err
	}
	if err := d.Validate(); err != nil {
		return "", err
	}
	return spec.Locator + "@" + d.String(), nil
}
