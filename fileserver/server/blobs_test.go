package server

import (
	"bufio"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/blobstore"
)

func TestBlobUploadAndDownload(t *testing.T) {
	f := newFixture(t)
	content := []byte("droplet v1")
	md := md5.Sum(content)
	sum := sha256.Sum256(content)
	hexSum := hex.EncodeToString(sum[:])

	code, body, _ := do(t, "PUT", f.signed("/v1/blobs/droplets/app.tgz", time.Minute), content,
		map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(md[:]), "X-Checksum-Sha256": hexSum})
	require.Equal(t, http.StatusCreated, code, body)
	var info blobstore.Info
	require.NoError(t, json.Unmarshal([]byte(body), &info))
	assert.Equal(t, blobstore.Info{Key: "droplets/app.tgz", SHA256: hexSum, Size: int64(len(content))}, info)

	code, body, h := do(t, "GET", f.url+"/v1/blobs/droplets/app.tgz", nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, string(content), body)
	assert.Equal(t, `"`+hexSum+`"`, h.Get("ETag"))
	code, _, _ = do(t, "GET", f.url+"/v1/blobs/droplets/app.tgz", nil, map[string]string{"If-None-Match": `"` + hexSum + `"`})
	assert.Equal(t, http.StatusNotModified, code)
	code, body, _ = do(t, "GET", f.url+"/v1/blobs/droplets/app.tgz", nil, map[string]string{"Range": "bytes=8-"})
	assert.Equal(t, http.StatusPartialContent, code)
	assert.Equal(t, "v1", body)

	code, _, _ = do(t, "POST", f.signed("/v1/blobs/droplets/app.tgz", time.Minute), []byte("droplet v2"), nil)
	require.Equal(t, http.StatusCreated, code, "POST accepted with the same signature; overwrite")
	code, body, h = do(t, "GET", f.url+"/v1/blobs/droplets/app.tgz", nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "droplet v2", body)
	assert.NotEqual(t, `"`+hexSum+`"`, h.Get("ETag"), "a replaced blob gets a new ETag")

	code, body, _ = do(t, "HEAD", f.url+"/v1/blobs/droplets/app.tgz", nil, nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body)
	code, body, _ = do(t, "GET", f.url+"/v1/blobs/droplets/nope.tgz", nil, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "blob not found: droplets/nope.tgz\n", body)

	assert.Equal(t, float64(len(content)+len("droplet v2")), testutil.ToFloat64(f.metrics.UploadBytes.WithLabelValues("blob")))
	assert.Equal(t, 2.0, testutil.ToFloat64(f.metrics.Requests.WithLabelValues("blob-upload", "201")))
}

// TestBlobUploadRefusals: each refusal answers its status and message and stores nothing.
func TestBlobUploadRefusals(t *testing.T) {
	otherMD5 := md5.Sum([]byte("other"))
	tests := []struct {
		name    string
		url     func(f *fixture) string
		headers map[string]string
		code    int
		want    string
		reason  string
	}{
		{"missing signature", func(f *fixture) string { return f.url + "/v1/blobs/k" }, nil, 403, "invalid signature", "bad-signature"},
		{"bad signature", func(f *fixture) string {
			return f.url + "/v1/blobs/k?expires=1700000060&signature=" + strings.Repeat("ab", 32)
		}, nil, 403, "invalid signature", "bad-signature"},
		{"signed with another key", func(f *fixture) string {
			u, _ := url.Parse(f.signed("/v1/blobs/k", time.Minute))
			q := u.Query()
			q.Set("signature", hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
			u.RawQuery = q.Encode()
			return u.String()
		}, nil, 403, "invalid signature", "bad-signature"},
		{"signature for another key path", func(f *fixture) string {
			return f.url + "/v1/blobs/k?" + strings.SplitN(f.signed("/v1/blobs/other", time.Minute), "?", 2)[1]
		}, nil, 403, "invalid signature", "bad-signature"},
		{"tampered expiry", func(f *fixture) string {
			return strings.Replace(f.signed("/v1/blobs/k", time.Minute), "expires=1700000060", "expires=1800000000", 1)
		}, nil, 403, "invalid signature", "bad-signature"},
		{"expired", func(f *fixture) string { return f.signed("/v1/blobs/k", -time.Second) }, nil, 403, "signed URL expired", "expired"},
		{"content-md5 mismatch", func(f *fixture) string { return f.signed("/v1/blobs/k", time.Minute) },
			map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(otherMD5[:])}, 400, "checksum mismatch: Content-MD5 want", "checksum-mismatch"},
		{"sha256 mismatch", func(f *fixture) string { return f.signed("/v1/blobs/k", time.Minute) },
			map[string]string{"X-Checksum-Sha256": strings.Repeat("0", 64)}, 400, "checksum mismatch: X-Checksum-Sha256 want 0000", "checksum-mismatch"},
		{"malformed content-md5", func(f *fixture) string { return f.signed("/v1/blobs/k", time.Minute) },
			map[string]string{"Content-MD5": "nope"}, 400, "Content-MD5: want the base64 of 16 bytes", "bad-checksum-header"},
		{"bad key", func(f *fixture) string { return f.url + "/v1/blobs/a%20b" }, nil, 400, `blob key "a b": character ' ' not allowed`, "bad-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			code, body, _ := do(t, "PUT", tt.url(f), []byte("payload"), tt.headers)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, body, tt.want)
			assert.Empty(t, f.storedFiles(t), "nothing stored")
			assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.Refusals.WithLabelValues(tt.reason)))
		})
	}
}

func TestBlobUploadOverLimit(t *testing.T) {
	f := newFixture(t)
	code, body, _ := do(t, "PUT", f.signed("/v1/blobs/k", time.Minute), make([]byte, 2<<20), nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Contains(t, body, "blob larger than max_blob_bytes")
	assert.Empty(t, f.storedFiles(t))
}

// TestInterruptedUploadLeavesNothing: a client announcing 1000 bytes that sends 10 and
// hangs up leaves neither a blob nor a temporary file.
func TestInterruptedUploadLeavesNothing(t *testing.T) {
	f := newFixture(t)
	u, err := url.Parse(f.signed("/v1/blobs/droplets/cut.tgz", time.Minute))
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n0123456789", u.RequestURI(), u.Host)
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	require.Eventually(t, func() bool {
		return testutil.ToFloat64(f.metrics.Refusals.WithLabelValues("interrupted")) == 1
	}, waitTimeout, pollEvery, "the handler saw the cut-off body")
	assert.Empty(t, f.storedFiles(t), "no blob and no temporary file")
	code, _, _ := do(t, "GET", f.url+"/v1/blobs/droplets/cut.tgz", nil, nil)
	assert.Equal(t, http.StatusNotFound, code)
}

// TestBlobKeyConflicts: a key under a blob, or at a directory of blobs, is a 409
// answered before the body is read: the client here announces a body of
// max_blob_bytes that it never sends (net/http would read a small unread body before
// answering).
func TestBlobKeyConflicts(t *testing.T) {
	f := newFixture(t)
	code, body, _ := do(t, "PUT", f.signed("/v1/blobs/packages/x.zip", time.Minute), []byte("zip"), nil)
	require.Equal(t, http.StatusCreated, code, body)

	tests := []struct{ key, want string }{
		{"packages/x.zip/y", "blob key packages/x.zip/y: packages/x.zip is a blob, so it cannot hold other blobs"},
		{"packages/x.zip/y/z", "blob key packages/x.zip/y/z: packages/x.zip is a blob, so it cannot hold other blobs"},
		{"packages", "blob key packages: is a directory of other blobs (packages/...)"},
	}
	for i, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			u, err := url.Parse(f.signed("/v1/blobs/"+tt.key, time.Minute))
			require.NoError(t, err)
			conn, err := net.Dial("tcp", u.Host)
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(waitTimeout)))
			_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, f.opts.MaxBlobBytes)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err, "answered without the body")
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, http.StatusConflict, resp.StatusCode)
			assert.Equal(t, tt.want+"\n", string(data))
			assert.Equal(t, float64(i+1), testutil.ToFloat64(f.metrics.Refusals.WithLabelValues("key-conflict")))
		})
	}
	code, body, _ = do(t, "GET", f.url+"/v1/blobs/packages/x.zip", nil, nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "zip", body)
	assert.Len(t, f.storedFiles(t), 1, "nothing else stored, no temporary file")
}
