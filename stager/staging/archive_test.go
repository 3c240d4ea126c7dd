package staging_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"drover.dev/stager/staging"
)

// ZipOf is a zip of the named files.
func zipOf(t testing.TB, names ...string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("#!/bin/sh\n"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// tgzOf is a tar.gz of the named files.
func tgzOf(t testing.TB, names ...string) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: 3, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte("x\n\n"))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = gz.Close()
	return b.Bytes()
}

func TestInspectArchive(t *testing.T) {
	cases := []struct {
		name    string
		archive []byte
		format  staging.ArchiveFormat
		err     string
	}{
		{"zip with compile", zipOf(t, "bin/detect", "bin/compile", "bin/release"), staging.FormatZip, ""},
		{"tgz with supply", tgzOf(t, "./bin/detect", "./bin/supply"), staging.FormatTarGz, ""},
		{"tgz with finalize", tgzOf(t, "bin/detect", "bin/finalize"), staging.FormatTarGz, ""},
		{"no detect", zipOf(t, "bin/compile"), "", "buildpack archive has no bin/detect"},
		{"detect under a directory", zipOf(t, "nodejs/bin/detect", "nodejs/bin/compile"), "", "buildpack archive has no bin/detect"},
		{"no build step", tgzOf(t, "bin/detect", "bin/release"), "", "has none of bin/compile, bin/supply, bin/finalize"},
		{"empty", nil, "", "buildpack archive is empty"},
		{"too large", make([]byte, staging.MaxArchiveBytes+1), "", "more than the limit"},
		{"not an archive", []byte("hello"), "", "neither a zip nor a tar.gz"},
		{"broken gzip", []byte{0x1f, 0x8b, 1, 2, 3}, "", "buildpack archive (tgz)"},
		{"broken zip", []byte("PK\x03\x04garbage"), "", "buildpack archive (zip)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			format, err := staging.InspectArchive(tc.archive)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || format != tc.format {
				t.Fatalf("format %q err %v, want %q", format, err, tc.format)
			}
		})
	}
}

func FuzzInspectArchive(f *testing.F) {
	f.Add(zipOf(f, "bin/detect", "bin/compile"))
	f.Add(tgzOf(f, "bin/detect", "bin/supply"))
	f.Add([]byte("PK\x05\x06"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = staging.InspectArchive(b)
	})
}
