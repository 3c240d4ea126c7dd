package download

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"sort"
	"testing"
	"time"

	"drover.dev/executor/internal/archivepolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// file is one archive member for the test helpers.
type file struct {
	name, body, link string
	dir              bool
	mode             int64
}

// makeTar builds a tar archive of files.
func makeTar(t *testing.T, files ...file) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1600000000, 0)}
		switch {
		case f.dir:
			hdr.Typeflag, hdr.Mode, hdr.Size, hdr.Name = tar.TypeDir, 0o755, 0, f.name+"/"
		case f.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, f.link, 0
		}
		if f.mode != 0 {
			hdr.Mode = f.mode
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write([]byte(f.body[:hdr.Size]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// gzipped compresses data.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	_, err := gw.Write(data)
	require.NoError(t, err)
	require.NoError(t, gw.Close())
	return buf.Bytes()
}

// makeZip builds a zip archive of files.
func makeZip(t *testing.T, files ...file) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: time.Unix(1600000000, 0)}
		body := f.body
		switch {
		case f.dir:
			hdr.Name += "/"
			hdr.SetMode(fs.ModeDir | 0o755)
		case f.link != "":
			hdr.SetMode(fs.ModeSymlink | 0o777)
			body = f.link
		default:
			mode := fs.FileMode(0o644)
			if f.mode != 0 {
				mode = fs.FileMode(f.mode)
			}
			hdr.SetMode(mode)
		}
		w, err := zw.CreateHeader(hdr)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// member is what a test sees of one tar entry.
type member struct {
	typ  byte
	mode int64
	body string
	link string
}

// readTar reads a tar stream into a map by entry name.
func readTar(t *testing.T, r io.Reader) map[string]member {
	t.Helper()
	out := map[string]member{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[hdr.Name] = member{typ: hdr.Typeflag, mode: hdr.Mode, body: string(body), link: hdr.Linkname}
	}
}

// names lists a tar map's entry names in order.
func names(m map[string]member) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestDetectFormat(t *testing.T) {
	tarball := makeTar(t, file{name: "a", body: "x"})
	v7 := append([]byte(nil), tarball...)
	copy(v7[257:265], make([]byte, 8)) // wipe the ustar magic and version
	sum := 0
	for i, b := range v7[:512] {
		if i >= 148 && i < 156 {
			b = ' '
		}
		sum += int(b)
	}
	copy(v7[148:156], []byte(string(octal(sum))))
	for _, tc := range []struct {
		name string
		head []byte
		want format
	}{
		{"gzip", gzipped(t, tarball), formatGzip},
		{"zip", makeZip(t, file{name: "a", body: "x"}), formatZip},
		{"empty zip", makeZip(t), formatZip},
		{"ustar", tarball, formatTar},
		{"v7 tar by checksum", v7, formatTar},
		{"empty tar", makeTar(t), formatTar},
		{"plain text", []byte("hello world"), formatUnknown},
		{"plain 1k", bytes.Repeat([]byte("hello "), 200), formatUnknown},
		{"empty", nil, formatUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, detectFormat(tc.head))
		})
	}
}

// octal formats a tar checksum field (six digits, NUL, space).
func octal(n int) []byte {
	s := []byte("000000\x00 ")
	for i := 5; i >= 0; i-- {
		s[i] = byte('0' + n%8)
		n /= 8
	}
	return s
}

func TestZipToTar(t *testing.T) {
	data := makeZip(t,
		file{name: "app", dir: true},
		file{name: "app/run.sh", body: "#!/bin/sh\necho hi\n", mode: 0o755},
		file{name: "app/data.txt", body: "data"},
		file{name: "app/link", link: "run.sh"},
		file{name: `win\path.txt`, body: "win"},
	)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, zipToTar(&buf, zr))
	got := readTar(t, &buf)
	assert.Equal(t, []string{"app/", "app/data.txt", "app/link", "app/run.sh", "win/path.txt"}, names(got))
	assert.Equal(t, member{typ: tar.TypeDir, mode: 0o755}, got["app/"])
	assert.Equal(t, member{typ: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\necho hi\n"}, got["app/run.sh"])
	assert.Equal(t, member{typ: tar.TypeReg, mode: 0o644, body: "data"}, got["app/data.txt"])
	assert.Equal(t, member{typ: tar.TypeSymlink, mode: 0o777, link: "run.sh"}, got["app/link"])
}

func TestEscapingEntriesAreRefusedAlikeInTarAndZip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []file
		wantErr string
	}{
		{name: "dotdot", entries: []file{{name: "ok.txt", body: "x"}, {name: "../evil", body: "x"}},
			wantErr: `archive entry "../evil": its name has a ".." component`},
		{name: "inner dotdot", entries: []file{{name: "app/../../evil", body: "x"}},
			wantErr: `archive entry "app/../../evil": its name has a ".." component`},
		{name: "absolute", entries: []file{{name: "/etc/cron.d/evil", body: "x"}},
			wantErr: `archive entry "/etc/cron.d/evil": its name is an absolute path`},
		{name: "symlink out", entries: []file{{name: "app/etc", link: "../../../etc"}},
			wantErr: `archive entry "app/etc": symlink target "../../../etc" points outside /home/vcap`},
		{name: "absolute symlink out", entries: []file{{name: "root", link: "/"}},
			wantErr: `archive entry "root": symlink target "/" points outside /home/vcap`},
		{name: "well-behaved", entries: []file{{name: "app", dir: true}, {name: "app/a", body: "x"}, {name: "app/b", link: "/home/vcap/app/a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tarErr := firstPolicyError(t, makeTar(t, tc.entries...))
			zipErr := firstPolicyError(t, makeZip(t, tc.entries...))
			if tc.wantErr == "" {
				assert.NoError(t, tarErr)
				assert.NoError(t, zipErr)
				return
			}
			require.Error(t, tarErr)
			require.Error(t, zipErr)
			assert.EqualError(t, tarErr, tc.wantErr)
			assert.EqualError(t, zipErr, tc.wantErr)
		})
	}
}

// firstPolicyError opens data as a download does and checks its entries into
// /home/vcap as an extraction does; it returns the first refusal.
func firstPolicyError(t *testing.T, data []byte) error {
	t.Helper()
	rc, err := openTar(io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), func() error { return nil }, "http://blob/x")
	require.NoError(t, err)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		require.NoError(t, err)
		if _, err := archivepolicy.Check("/home/vcap", hdr); err != nil {
			return err
		}
	}
}

func TestParseChecksum(t *testing.T) {
	for _, tc := range []struct {
		name, alg, value string
		want             checksum
		err              string
	}{
		{name: "none"},
		{name: "md5", alg: "md5", value: "ABCDEF", want: checksum{alg: "md5", value: "abcdef"}},
		{name: "upper-case algorithm", alg: "SHA256", value: "00", want: checksum{alg: "sha256", value: "00"}},
		{name: "sha1", alg: "sha1", value: "aa", want: checksum{alg: "sha1", value: "aa"}},
		{name: "unknown", alg: "crc32", value: "aa", err: `unsupported checksum_algorithm "crc32": want md5, sha1, sha256 or sha512`},
		{name: "value only", value: "aa", err: "checksum_value is set but checksum_algorithm is empty"},
		{name: "algorithm only", alg: "md5", err: `checksum_algorithm "md5" is set but checksum_value is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseChecksum(tc.alg, tc.value)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDisplayURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h/p/file.tgz?signature=secret": "http://h/p/file.tgz",
		"https://user:pw@h:8443/x.zip#frag":    "https://h:8443/x.zip",
		"http://h/plain":                       "http://h/plain",
		"http://h/%zz":                         "<unparseable url>",
	} {
		assert.Equal(t, want, displayURL(in), in)
	}
}
