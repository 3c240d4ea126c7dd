// Package download is the executor's cached downloader (upstream cacheddownloader): it
// fetches tar, tgz and zip archives over HTTP, verifies their checksums, keeps them in an
// LRU cache on disk keyed by cache key, revalidates cached entries with ETag and
// Last-Modified, and hands every archive back as a tar stream.
package download

import (
	"fmt"
	"net/url"
)

// Request says what to fetch and how to check it.
type Request struct {
	// URL is the artifact's http(s) address.
	URL string
	// CacheKey names the cache entry; empty means the download is not cached.
	CacheKey string
	// ChecksumAlgorithm is md5, sha1, sha256 or sha512 (case-insensitive); empty means no check.
	ChecksumAlgorithm string
	// ChecksumValue is the expected hex digest (case-insensitive).
	ChecksumValue string
}

// validate checks the request before anything is downloaded.
func (r Request) validate() error {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid download url %q: want an absolute http or https url", displayURL(r.URL))
	}
	_, err = parseChecksum(r.ChecksumAlgorithm, r.ChecksumValue)
	return err
}

// displayURL is rawURL without its query, fragment and user info, fit for errors and logs.
func displayURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparseable url>"
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment, u.User = "", false, "", "", nil
	return u.String()
}
