package server

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/signedurl"
)

// entry is one listed file as JSON.
func entry(fn, content string) map[string]any {
	sum := sha1.Sum([]byte(content))
	return map[string]any{"fn": fn, "sha1": hex.EncodeToString(sum[:]), "size": len(content), "mode": "0644"}
}

// packageBody is a multipart package upload: the list and, when app is not nil, a zip
// of app (name → content).
func packageBody(t *testing.T, list []map[string]any, app map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	data, err := json.Marshal(list)
	require.NoError(t, err)
	require.NoError(t, mw.WriteField("resources", string(data)))
	if app != nil {
		part, err := mw.CreateFormFile("application", "app.zip")
		require.NoError(t, err)
		zw := zip.NewWriter(part)
		for name, content := range app {
			w, err := zw.Create(name)
			require.NoError(t, err)
			_, err = w.Write([]byte(content))
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
	}
	require.NoError(t, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

func (f *fixture) postPackage(t *testing.T, url string, list []map[string]any, app map[string]string) (int, string) {
	t.Helper()
	body, contentType := packageBody(t, list, app)
	code, resp, _ := do(t, "POST", url, body, map[string]string{"Content-Type": contentType})
	return code, resp
}

func TestPackageUploadAndResourceMatch(t *testing.T) {
	f := newFixture(t)
	list := []map[string]any{entry("index.html", "<h1>hi</h1>"), entry("css/site.css", "body{}")}
	code, body := f.postPackage(t, f.signed("/v1/packages", time.Minute), list, map[string]string{"index.html": "<h1>hi</h1>", "css/site.css": "body{}"})
	require.Equal(t, http.StatusCreated, code, body)
	var pkg map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &pkg))
	assert.Equal(t, "packages/"+pkg["sha256"].(string)+".zip", pkg["key"])
	assert.Equal(t, 2.0, pkg["received_files"])
	assert.Equal(t, 17.0, pkg["received_bytes"])
	assert.Equal(t, 0.0, pkg["reused_files"])

	match, _ := json.Marshal([]map[string]any{
		{"sha1": list[0]["sha1"], "size": list[0]["size"]},
		entry("", "unknown"),
		{"sha1": list[1]["sha1"], "size": 99},
	})
	code, body, _ = do(t, "POST", f.url+"/v1/resource_match", match, nil)
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `[{"sha1":"`+list[0]["sha1"].(string)+`","size":11}]`, body, "only known content of the same size")

	code, body = f.postPackage(t, f.signed("/v1/packages", time.Minute), list, map[string]string{})
	require.Equal(t, http.StatusCreated, code, body)
	var again map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &again))
	assert.Equal(t, 0.0, again["received_files"])
	assert.Equal(t, 2.0, again["reused_files"])
	assert.Equal(t, pkg["sha256"], again["sha256"])

	code, body, _ = do(t, "GET", f.url+"/v1/blobs/"+pkg["key"].(string), nil, nil)
	require.Equal(t, http.StatusOK, code)
	zr, err := zip.NewReader(bytes.NewReader([]byte(body)), int64(len(body)))
	require.NoError(t, err)
	assert.Equal(t, "css/site.css", zr.File[0].Name)
	assert.Equal(t, "index.html", zr.File[1].Name)

	assert.Equal(t, 2.0, testutil.ToFloat64(f.metrics.PackageFiles.WithLabelValues("received")))
	assert.Equal(t, 2.0, testutil.ToFloat64(f.metrics.PackageFiles.WithLabelValues("reused")))
	assert.Equal(t, 17.0, testutil.ToFloat64(f.metrics.UploadBytes.WithLabelValues("package")))
}

func TestResourceMatchRefusesBadInput(t *testing.T) {
	f := newFixture(t)
	tests := []struct{ name, body, want string }{
		{"not json", `[{"sha1":`, "resources: want a JSON array"},
		{"bad sha1", `[{"sha1":"` + entry("", "x")["sha1"].(string) + `","size":1},{"sha1":"nothex","size":1}]`, `entry 1: sha1: want 40 lowercase hex digits, got "nothex"`},
		{"negative size", `[{"sha1":"` + entry("", "x")["sha1"].(string) + `","size":-2}]`, "entry 0: size: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := do(t, "POST", f.url+"/v1/resource_match", []byte(tt.body), nil)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Contains(t, body, tt.want)
		})
	}
}

// TestPackageUploadRefusals: each refusal answers its status and message and stores
// nothing (no package, nothing pooled, no scratch file).
func TestPackageUploadRefusals(t *testing.T) {
	a, b := entry("a.txt", "aaaa"), entry("b.txt", "bbb")
	signed := func(f *fixture) string { return f.signed("/v1/packages", time.Minute) }
	var many, long []map[string]any
	for i := range 11 {
		many = append(many, entry(fmt.Sprintf("f%d", i), "x"))
	}
	for i := range 6 {
		long = append(long, entry(fmt.Sprintf("%s%d", strings.Repeat("d", 400), i), "x"))
	}
	tests := []struct {
		name string
		url  func(f *fixture) string
		list []map[string]any
		app  map[string]string
		code int
		want string
	}{
		{"missing resource", signed, []map[string]any{a, b}, map[string]string{"a.txt": "aaaa"}, 422, "missing resource b.txt (sha1 " + b["sha1"].(string) + ")"},
		{"parent fn", signed, []map[string]any{entry("../x", "aaaa")}, map[string]string{"x": "aaaa"}, 400, `fn "../x": must not contain a ".." segment`},
		{"absolute fn", signed, []map[string]any{entry("/abs", "aaaa")}, map[string]string{"abs": "aaaa"}, 400, `fn "/abs": must be relative, not absolute`},
		{"duplicate fn", signed, []map[string]any{a, entry("a.txt", "other")}, map[string]string{"a.txt": "aaaa"}, 400, `entry 1: fn "a.txt": listed twice`},
		{"listed files over the byte cap", signed, []map[string]any{entry("big", string(make([]byte, 900))), entry("big2", string(make([]byte, 2000)))},
			map[string]string{"big2": string(make([]byte, 2000))}, 400, "files sum to more than the limit of 1000 bytes"},
		{"unlisted zip entry over the byte cap", signed, []map[string]any{a},
			map[string]string{"a.txt": "aaaa", "huge": string(make([]byte, 1001))}, 413, "zip entry huge: 1001 bytes exceed max_package_bytes 1000"},
		{"listed files over the count cap", signed, many, map[string]string{"f0": "x"}, 413, "resources: more than 10 files (max_package_files)"},
		{"resource list over its byte cap", signed, long, map[string]string{}, 413, "resources: more than 2048 bytes (max_package_list_bytes)"},
		{"too many zip entries", signed, []map[string]any{a},
			map[string]string{"1": "1", "2": "2", "3": "3", "4": "4", "5": "5", "6": "6", "7": "7", "8": "8", "9": "9", "10": "10", "11": "11"}, 413, "11 zip entries exceed max_package_files 10"},
		{"signature for another path", func(f *fixture) string {
			return f.url + "/v1/packages?" + signedurl.Sign(testKey, "/v1/blobs/packages", f.now.Add(time.Minute)).Encode()
		}, []map[string]any{a}, map[string]string{"a.txt": "aaaa"}, 403, "invalid signature"},
		{"expired", func(f *fixture) string { return f.signed("/v1/packages", -time.Minute) }, []map[string]any{a}, map[string]string{"a.txt": "aaaa"}, 403, "signed URL expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			code, body := f.postPackage(t, tt.url(f), tt.list, tt.app)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, body, tt.want)
			assert.Empty(t, f.storedFiles(t), "nothing stored")
		})
	}
}

func TestPackageUploadRefusesTwoResourceLists(t *testing.T) {
	f := newFixture(t)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(t, mw.WriteField("resources", "[]"))
	require.NoError(t, mw.WriteField("resources", "[]"))
	require.NoError(t, mw.Close())
	code, body, _ := do(t, "POST", f.signed("/v1/packages", time.Minute), buf.Bytes(), map[string]string{"Content-Type": mw.FormDataContentType()})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `form field "resources" given twice`)
}

func TestPackageUploadRefusesANonMultipartBody(t *testing.T) {
	f := newFixture(t)
	code, body, _ := do(t, "POST", f.signed("/v1/packages", time.Minute), []byte("{}"), map[string]string{"Content-Type": "application/json"})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "want multipart/form-data")
	code, body = f.postPackage(t, f.signed("/v1/packages", time.Minute), []map[string]any{entry("a", "a")}, map[string]string{"a": "a"})
	require.Equal(t, http.StatusCreated, code, body)
}
