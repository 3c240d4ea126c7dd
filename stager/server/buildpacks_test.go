package server_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

func buildpackZip(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, _ := zw.Create(n)
		_, _ = w.Write([]byte("#!/bin/sh\n" + n))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Fatalf("err = %v, want %s %q", err, code, msg)
	}
}

func TestBuildpackLifecycle(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	archive := buildpackZip(t, "bin/detect", "bin/compile", "bin/release")
	sum := sha256.Sum256(archive)
	sha := hex.EncodeToString(sum[:])
	created, err := h.client.CreateBuildpack(ctx, &stagerv1.CreateBuildpackRequest{Name: "nodejs", Stack: "bookworm", Archive: archive, Filename: "nodejs.zip"})
	if err != nil {
		t.Fatal(err)
	}
	b := created.Buildpack
	wantKey := "buildpacks/bookworm/nodejs-" + sha[:16] + ".zip"
	if b.Name != "nodejs" || b.Position != 1 || b.Sha256 != sha || b.Size != int64(len(archive)) || b.BlobKey != wantKey || b.Filename != "nodejs.zip" {
		t.Fatalf("created %v", b)
	}
	if keys := h.files.keys(); fmt.Sprint(keys) != "["+wantKey+"]" {
		t.Fatalf("uploaded %v", keys)
	}
	if _, err := h.client.CreateBuildpack(ctx, &stagerv1.CreateBuildpackRequest{Name: "go", Stack: "bookworm", Position: 1, Archive: archive}); err != nil {
		t.Fatal(err)
	}
	_, err = h.client.CreateBuildpack(ctx, &stagerv1.CreateBuildpackRequest{Name: "go", Stack: "bookworm", Archive: archive})
	wantStatus(t, err, codes.AlreadyExists, `buildpack "go" is already registered for stack "bookworm"`)

	list, err := h.client.ListBuildpacks(ctx, &stagerv1.ListBuildpacksRequest{Stack: "bookworm"})
	if err != nil || len(list.Buildpacks) != 2 || list.Buildpacks[0].Name != "go" || list.Buildpacks[1].Position != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	newer := buildpackZip(t, "bin/detect", "bin/supply")
	up, err := h.client.UpdateBuildpack(ctx, &stagerv1.UpdateBuildpackRequest{Name: "nodejs", Stack: "bookworm", Position: 1, Archive: newer, Filename: "n2.zip"})
	if err != nil {
		t.Fatal(err)
	}
	if up.Buildpack.Position != 1 || up.Buildpack.Sha256 == sha || up.Buildpack.Filename != "n2.zip" || len(h.files.keys()) != 3 {
		t.Fatalf("updated %v, uploads %v", up.Buildpack, h.files.keys())
	}
	_, err = h.client.UpdateBuildpack(ctx, &stagerv1.UpdateBuildpackRequest{Name: "nope", Stack: "bookworm", Position: 1})
	wantStatus(t, err, codes.NotFound, `buildpack "nope" is not registered for stack "bookworm"`)
	if _, err := h.client.DeleteBuildpack(ctx, &stagerv1.DeleteBuildpackRequest{Name: "nodejs", Stack: "bookworm"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.client.DeleteBuildpack(ctx, &stagerv1.DeleteBuildpackRequest{Name: "nodejs", Stack: "bookworm"})
	wantStatus(t, err, codes.NotFound, `buildpack "nodejs" is not registered for stack "bookworm"`)
	list, _ = h.client.ListBuildpacks(ctx, &stagerv1.ListBuildpacksRequest{})
	if len(list.Buildpacks) != 1 || list.Buildpacks[0].Name != "go" || list.Buildpacks[0].Position != 1 {
		t.Fatalf("after delete %v", list)
	}
}

func TestCreateBuildpackRefuses(t *testing.T) {
	h := newHarness(t)
	good := buildpackZip(t, "bin/detect", "bin/compile")
	cases := []struct {
		name string
		req  *stagerv1.CreateBuildpackRequest
		msg  string
	}{
		{"bad name", &stagerv1.CreateBuildpackRequest{Name: "Node JS", Stack: "bookworm", Archive: good}, "name: must match"},
		{"unknown stack", &stagerv1.CreateBuildpackRequest{Name: "n", Stack: "nostack", Archive: good}, `stack: unknown stack "nostack"; known: bookworm, busybox`},
		{"negative position", &stagerv1.CreateBuildpackRequest{Name: "n", Stack: "bookworm", Position: -1, Archive: good}, "position: must be 0"},
		{"long filename", &stagerv1.CreateBuildpackRequest{Name: "n", Stack: "bookworm", Archive: good, Filename: strings.Repeat("f", 256)}, "filename: must be at most 255"},
		{"every bad field", &stagerv1.CreateBuildpackRequest{Name: "", Stack: "x", Archive: good}, "name: must match"},
		{"empty archive", &stagerv1.CreateBuildpackRequest{Name: "n", Stack: "bookworm"}, "buildpack archive is empty"},
		{"no bin/detect", &stagerv1.CreateBuildpackRequest{Name: "n", Stack: "bookworm", Archive: buildpackZip(t, "bin/compile")}, "buildpack archive has no bin/detect"},
		{"no build step", &stagerv1.CreateBuildpackRequest{Name: "n", Stack: "bookworm", Archive: buildpackZip(t, "bin/detect")}, "none of bin/compile, bin/supply, bin/finalize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client.CreateBuildpack(context.Background(), tc.req)
			wantStatus(t, err, codes.InvalidArgument, tc.msg)
		})
	}
	if keys := h.files.keys(); len(keys) != 0 {
		t.Errorf("refused archives were uploaded: %v", keys)
	}
}

func TestLargeArchiveIsAccepted(t *testing.T) {
	h := newHarness(t)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range []string{"bin/detect", "bin/compile"} {
		w, _ := zw.Create(n)
		_, _ = w.Write([]byte("#!/bin/sh\n"))
	}
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "blob", Method: zip.Store})
	_, _ = w.Write(bytes.Repeat([]byte{7}, 40<<20))
	_ = zw.Close()
	if _, err := h.client.CreateBuildpack(context.Background(), &stagerv1.CreateBuildpackRequest{Name: "big", Stack: "bookworm", Archive: b.Bytes()}); err != nil {
		t.Fatalf("a 40 MiB archive: %v", err)
	}
}
