package download

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
)

// validators are the cached entry's ETag and Last-Modified, sent back to revalidate it.
type validators struct {
	etag, lastModified string
}

// present reports whether there is anything to revalidate with.
func (v validators) present() bool { return v.etag != "" || v.lastModified != "" }

// download is what one GET produced: either "not modified" or a verified temp file.
type download struct {
	notModified bool
	file        *os.File
	size        int64
	digest      string
	validators  validators
}

// get does one GET of req.URL under a download slot and the download timeout. A 2xx body
// is written to a temp file in the cache dir and checked against sum.
func (c *Cache) get(ctx context.Context, req Request, sum checksum, v validators) (download, error) {
	where := displayURL(req.URL)
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return download{}, fmt.Errorf("downloading %s: %w", where, ctx.Err())
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return download{}, fmt.Errorf("downloading %s: %w", where, err)
	}
	if v.etag != "" {
		hreq.Header.Set("If-None-Match", v.etag)
	}
	if v.lastModified != "" {
		hreq.Header.Set("If-Modified-Since", v.lastModified)
	}
	resp, err := c.client.Do(hreq)
	if err != nil {
		return download{}, fmt.Errorf("downloading %s: %w", where, withoutURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && v.present() {
		return download{notModified: true}, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return download{}, fmt.Errorf("downloading %s: unexpected status %s", where, resp.Status)
	}

	f, err := os.CreateTemp(c.dir, filePrefix+"*")
	if err != nil {
		return download{}, fmt.Errorf("downloading %s: %w", where, err)
	}
	fail := func(err error) (download, error) {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return download{}, err
	}
	h := sum.newHash()
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return fail(fmt.Errorf("downloading %s: %w", where, withoutURL(err)))
	}
	if err := sum.verify(h, req.URL); err != nil {
		return fail(err)
	}
	d := download{
		file:       f,
		size:       n,
		validators: validators{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")},
	}
	if h != nil {
		d.digest = hexSum(h)
	}
	return d, nil
}

// withoutURL strips the *url.Error wrapper, whose text repeats the URL with its query.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// hexSum is h's digest in lower-case hex.
func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
