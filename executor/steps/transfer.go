package steps

import (
	"archive/tar"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// downloadStep fetches an artifact and streams it into the container.
type downloadStep struct {
	deps   *Deps
	model  *modelsv1.DownloadAction
	source string
}

func (s *downloadStep) Run(ctx context.Context, ready func()) error {
	if s.deps.Reattach {
		signalReady(ready)
		return nil
	}
	release, err := acquire(ctx, s.deps.DownloadSlots)
	if err != nil {
		return err
	}
	defer release()
	artifact := s.model.GetArtifact()
	if artifact != "" {
		s.deps.println(s.source, "stdout", fmt.Sprintf("Downloading %s...", artifact))
	}
	n, err := s.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ErrCancelled
		}
		what := "Downloading"
		if artifact != "" {
			what += " " + artifact
		}
		return emittable(err, "%s", truncate(fmt.Sprintf("%s failed: %s", what, err), MaxErrorBytes))
	}
	if artifact != "" {
		s.deps.println(s.source, "stdout", fmt.Sprintf("Downloaded %s (%s)", artifact, HumanBytes(n)))
	}
	signalReady(ready)
	return nil
}

func (s *downloadStep) fetch(ctx context.Context) (int64, error) {
	if s.deps.Downloader == nil {
		return 0, errors.New("no downloader configured on this cell")
	}
	rc, err := s.deps.Downloader.Fetch(ctx, DownloadRequest{
		URL:               s.model.GetFrom(),
		CacheKey:          s.model.GetCacheKey(),
		ChecksumAlgorithm: s.model.GetChecksumAlgorithm(),
		ChecksumValue:     s.model.GetChecksumValue(),
	})
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	counted := &countingReader{r: rc}
	if err := s.deps.Runtime.StreamIn(ctx, s.deps.Guid, s.model.GetTo(), s.model.GetUser(), counted); err != nil {
		return 0, fmt.Errorf("streaming into container: %w", err)
	}
	return counted.n, nil
}

// uploadStep streams a file out of the container and POSTs it to a URL.
type uploadStep struct {
	deps   *Deps
	model  *modelsv1.UploadAction
	source string
}

func (s *uploadStep) Run(ctx context.Context, ready func()) error {
	if s.deps.Reattach {
		signalReady(ready)
		return nil
	}
	release, err := acquire(ctx, s.deps.UploadSlots)
	if err != nil {
		return err
	}
	defer release()
	artifact := s.model.GetArtifact()
	if artifact != "" {
		s.deps.println(s.source, "stdout", fmt.Sprintf("Uploading %s...", artifact))
	}
	n, err := s.upload(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ErrCancelled
		}
		what := "Uploading"
		if artifact != "" {
			what += " " + artifact
		}
		return emittable(err, "%s failed", what)
	}
	if artifact != "" {
		s.deps.println(s.source, "stdout", fmt.Sprintf("Uploaded %s (%s)", artifact, HumanBytes(n)))
	}
	signalReady(ready)
	return nil
}

// upload spools the first entry of the tar stream of `from` and posts it with its
// Content-MD5.
func (s *uploadStep) upload(ctx context.Context) (int64, error) {
	rc, err := s.deps.Runtime.StreamOut(ctx, s.deps.Guid, s.model.GetFrom())
	if err != nil {
		return 0, fmt.Errorf("streaming out of container: %w", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", s.model.GetFrom(), err)
	}
	spool, err := os.CreateTemp("", "drover-upload-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	sum := md5.New()
	n, err := io.Copy(io.MultiWriter(spool, sum), tr)
	if err != nil {
		return 0, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.model.GetTo(), spool)
	if err != nil {
		return 0, errors.New("invalid upload URL")
	}
	req.ContentLength = n
	// As upstream's uploader: the receiver verifies the body against Content-MD5.
	req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum.Sum(nil)))
	client := s.deps.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: UploadTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, errors.New("upload request failed")
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, fmt.Errorf("upload answered %d", resp.StatusCode)
	}
	return n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// HumanBytes formats a size like upstream's bytefmt ("512B", "1.5K", "20M").
func HumanBytes(n int64) string {
	units := []string{"B", "K", "M", "G", "T"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + units[i]
}
