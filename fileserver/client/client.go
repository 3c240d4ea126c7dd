// Package client talks to the drover fileserver: resource matching and package upload
// (what droverctl push does), signed upload URLs and download URLs for tasks and LRPs.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"drover.dev/fileserver/signedurl"
)

// DefaultTimeout bounds each request of a Client built with a nil *http.Client.
const DefaultTimeout = 5 * time.Minute

// Package is an assembled package as the server reports it.
type Package struct {
	Key           string `json:"key"`
	SHA256        string `json:"sha256"`
	Size          int64  `json:"size"`
	ReceivedFiles int    `json:"received_files"`
	ReusedFiles   int    `json:"reused_files"`
	ReceivedBytes int64  `json:"received_bytes"`
}

// Client is a fileserver client; signing needs the server's key.
type Client struct {
	base string
	key  []byte
	hc   *http.Client
}

// New returns a client of the fileserver at baseURL (e.g. "http://127.0.0.1:8080").
// A nil hc is a default client with DefaultTimeout.
func New(baseURL string, signingKey []byte, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), key: signingKey, hc: hc}
}

// MatchBatchSize is the most entries one resource_match request carries, well under
// the server's max_match_resources (by default 5000, Cloud Controller's cap).
const MatchBatchSize = 1000

// matchAttempts bounds the tries of a batch the server is too busy for (503).
const matchAttempts = 5

// maxRetryAfter caps the wait a busy server asks for.
const maxRetryAfter = 10 * time.Second

// content identifies a file's content: what resource matching compares.
type content struct {
	sha1 string
	size int64
}

// MatchResources returns the entries of rs whose content the server already has. It
// asks about each distinct sha1 and size once, without paths, in requests of at most
// MatchBatchSize entries, and retries a request the server was too busy for (503)
// after its Retry-After, a few times.
func (c *Client) MatchResources(ctx context.Context, rs []Resource) ([]Resource, error) {
	seen := map[content]bool{}
	unique := []Resource{}
	for _, r := range rs {
		if k := (content{r.SHA1, r.Size}); !seen[k] {
			seen[k] = true
			unique = append(unique, Resource{SHA1: r.SHA1, Size: r.Size})
		}
	}
	known := map[content]bool{}
	for start := 0; start < len(unique); start += MatchBatchSize {
		got, err := c.matchBatch(ctx, unique[start:min(start+MatchBatchSize, len(unique))])
		if err != nil {
			return nil, err
		}
		for _, r := range got {
			known[content{r.SHA1, r.Size}] = true
		}
	}
	out := []Resource{}
	for _, r := range rs {
		if known[content{r.SHA1, r.Size}] {
			out = append(out, r)
		}
	}
	return out, nil
}

// matchBatch sends one resource_match request, again while the server is busy.
func (c *Client) matchBatch(ctx context.Context, batch []Resource) ([]Resource, error) {
	body, err := json.Marshal(batch)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		var known []Resource
		err := c.do(ctx, http.MethodPost, c.base+"/v1/resource_match", "application/json", bytes.NewReader(body), http.StatusOK, &known)
		var status *statusError
		if !errors.As(err, &status) || status.code != http.StatusServiceUnavailable || attempt == matchAttempts {
			return known, err
		}
		timer := time.NewTimer(status.retryAfter)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// UploadPackage uploads the list of all files of dir and a zip of the missing ones; the
// server assembles the package from the zip and its pool.
func (c *Client) UploadPackage(ctx context.Context, dir string, all []Resource, missing []Resource) (Package, error) {
	list, err := json.Marshal(all)
	if err != nil {
		return Package{}, err
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(writeForm(mw, list, dir, missing))
	}()
	defer pr.Close()
	u := c.base + signedurl.PackagesPath + "?" + signedurl.Sign(c.key, signedurl.PackagesPath, time.Now().Add(time.Hour)).Encode()
	var pkg Package
	err = c.do(ctx, http.MethodPost, u, mw.FormDataContentType(), pr, http.StatusCreated, &pkg)
	return pkg, err
}

// writeForm writes the "resources" field and, when files are missing, the
// "application" zip.
func writeForm(mw *multipart.Writer, list []byte, dir string, missing []Resource) error {
	if err := mw.WriteField("resources", string(list)); err != nil {
		return err
	}
	if len(missing) > 0 {
		part, err := mw.CreateFormFile("application", "application.zip")
		if err != nil {
			return err
		}
		if err := WriteZip(part, dir, missing); err != nil {
			return err
		}
	}
	return mw.Close()
}

// SignedUploadURL is an absolute URL that accepts a PUT or POST of the blob at key
// for ttl.
func (c *Client) SignedUploadURL(key string, ttl time.Duration) string {
	return c.BlobURL(key) + "?" + signedurl.Sign(c.key, signedurl.BlobPath(key), time.Now().Add(ttl)).Encode()
}

// BlobURL is the absolute download URL of the blob at key.
func (c *Client) BlobURL(key string) string { return c.base + signedurl.BlobPath(key) }

// StaticURL is the absolute URL of a file of the static directory.
func (c *Client) StaticURL(path string) string {
	return c.base + "/v1/static/" + strings.TrimLeft(path, "/")
}

// ErrBlobNotFound is BlobSHA256's error for a key the server does not hold.
var ErrBlobNotFound = errors.New("blob not found")

// sha256Hex is a hex SHA-256, the content of a blob's ETag.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// BlobSHA256 asks the server (HEAD) for the blob at key and returns its sha256, read
// from the ETag; "" when the ETag is not one. A missing blob is ErrBlobNotFound.
func (c *Client) BlobSHA256(ctx context.Context, key string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, c.BlobURL(key), nil)
	if err != nil {
		return "", err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("fileserver: HEAD %s: %w", key, err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", fmt.Errorf("fileserver: %w: %s", ErrBlobNotFound, key)
	default:
		return "", fmt.Errorf("fileserver: HEAD %s: %s", key, resp.Status)
	}
	etag := strings.Trim(strings.TrimPrefix(resp.Header.Get("ETag"), "W/"), `"`)
	if !sha256Hex.MatchString(etag) {
		return "", nil
	}
	return etag, nil
}

// statusError is an answer with an unexpected status.
type statusError struct {
	msg        string
	code       int
	retryAfter time.Duration
}

func (e *statusError) Error() string { return e.msg }

// retryAfter reads a Retry-After in seconds: 1s when absent or not a number, at most
// maxRetryAfter.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return time.Second
	}
	return min(time.Duration(n)*time.Second, maxRetryAfter)
}

// do sends a request and decodes the JSON answer into out; another status than want is
// an error carrying the server's message.
func (c *Client) do(ctx context.Context, method, url, contentType string, body io.Reader, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("fileserver: %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &statusError{
			msg:        fmt.Sprintf("fileserver: %s %s: %s: %s", method, req.URL.Path, resp.Status, strings.TrimSpace(string(msg))),
			code:       resp.StatusCode,
			retryAfter: retryAfter(resp.Header.Get("Retry-After")),
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("fileserver: %s %s: decoding answer: %w", method, req.URL.Path, err)
	}
	return nil
}
