package containerd

import (
	"fmt"
	"time"

	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/opencontainers/image-spec/identity"
)

// Image garbage collection: an image pulled from a registry is removed once no
// container uses it (and no create is about to) for the configured grace; containerd's
// own GC then drops the layers and snapshots nothing else references. The image's
// remapped rootfses (remap.go) are removed with it. Preloaded images are never removed.

// imageGC is the bookkeeping of the image GC, guarded by Runtime.gcMu.
type imageGC struct {
	// inUse counts creates between their pull and the end of NewContainer, by image.
	inUse map[string]int
	// unusedSince is when an image was last seen unused; an entry means a collection
	// is scheduled.
	unusedSince map[string]time.Time
	// closed is set by Close: nothing more is scheduled.
	closed bool
}

// useImage marks the image name in use until the returned release is called.
func (r *Runtime) useImage(name string) (release func()) {
	r.gcMu.Lock()
	r.gc.inUse[name]++
	r.gcMu.Unlock()
	done := false
	return func() {
		r.gcMu.Lock()
		defer r.gcMu.Unlock()
		if done {
			return
		}
		done = true
		if r.gc.inUse[name]--; r.gc.inUse[name] <= 0 {
			delete(r.gc.inUse, name)
			r.scheduleImageGCLocked(name)
		}
	}
}

// scheduleImageGC schedules a collection of the image name after the grace.
func (r *Runtime) scheduleImageGC(name string) {
	if name == "" {
		return
	}
	r.gcMu.Lock()
	defer r.gcMu.Unlock()
	r.scheduleImageGCLocked(name)
}

func (r *Runtime) scheduleImageGCLocked(name string) {
	if r.gc.closed {
		return
	}
	_, pending := r.gc.unusedSince[name]
	r.gc.unusedSince[name] = time.Now()
	if pending {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		wait := r.cfg.Registry.GCGrace
		for {
			timer := time.NewTimer(wait)
			select {
			case <-r.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			if wait = r.collectImage(name); wait <= 0 {
				return
			}
		}
	}()
}

// collectImage removes the image name if it is a pulled image that nothing has used
// for the grace. It returns how much longer to wait when the grace is not over yet.
func (r *Runtime) collectImage(name string) time.Duration {
	r.gcMu.Lock()
	defer r.gcMu.Unlock()
	if left := r.cfg.Registry.GCGrace - time.Since(r.gc.unusedSince[name]); left > 0 {
		return left
	}
	delete(r.gc.unusedSince, name)
	if r.gc.inUse[name] > 0 {
		return 0
	}
	if err := r.removeUnusedImage(name); err != nil {
		r.logger.Warn("image-gc-failed", "image", name, "error", err)
	}
	return 0
}

// removeUnusedImage deletes the image record of name when it was pulled from a
// registry and no container uses it. The caller holds gcMu.
func (r *Runtime) removeUnusedImage(name string) error {
	ctx := r.ctx
	img, err := r.client.ImageService().Get(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if img.Labels[sourceLabel] != sourceRegistry {
		return nil
	}
	ctrs, err := r.client.Containers(ctx, fmt.Sprintf("image==%q", name))
	if err != nil {
		return fmt.Errorf("list containers of the image: %w", err)
	}
	if len(ctrs) > 0 {
		return nil
	}
	chainID := r.imageChainID(name)
	if err := r.client.ImageService().Delete(ctx, name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete image: %w", err)
	}
	r.logger.Info("image-collected", "image", name, "pulled-as", img.Labels[pulledAsLabel])
	if chainID != "" {
		// Its remapped rootfses (remap.go) hold its layers: they go too.
		if err := r.removeRemappedSnapshots(ctx, chainID); err != nil {
			return err
		}
	}
	return nil
}

// imageChainID is the chain id of the image name's layers ("" when unknown).
func (r *Runtime) imageChainID(name string) string {
	img, err := r.client.GetImage(r.ctx, name)
	if err != nil {
		return ""
	}
	diffIDs, err := img.RootFS(r.ctx)
	if err != nil {
		r.logger.Warn("image-gc-layers-unknown", "image", name, "error", err)
		return ""
	}
	return identity.ChainID(diffIDs).String()
}

// scheduleUnusedImages schedules a collection of every pulled image (at start: those
// whose containers went while no runtime ran are collected after the grace too).
func (r *Runtime) scheduleUnusedImages() error {
	imgs, err := r.client.ImageService().List(r.ctx, fmt.Sprintf("labels.%q==%q", sourceLabel, sourceRegistry))
	if err != nil {
		return fmt.Errorf("list pulled images: %w", err)
	}
	for _, img := range imgs {
		r.scheduleImageGC(img.Name)
	}
	return nil
}
