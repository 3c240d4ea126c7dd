package engine_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/executor/engine"
	"drover.dev/executor/steps"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// tarOf is a tar stream with one file.
func tarOf(t *testing.T, name, body string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}))
	_, err := tw.Write([]byte(body))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// startWithDownloader runs an executor whose downloads come from dl.
func startWithDownloader(t *testing.T, dl steps.Downloader) (*engine.Executor, func(guid, path string) string) {
	rt := newRuntime()
	e := engine.New(fastConfig(), rt, dl, nil)
	signals, ready, done := make(chan os.Signal, 1), make(chan struct{}), make(chan error, 1)
	go func() { done <- e.Loop(signals, ready) }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("executor not ready")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, _ := e.List(ctx)
		for _, c := range cs {
			_ = e.Delete(ctx, c.Guid)
		}
		signals <- syscall.SIGTERM
		<-done
	})
	read := func(guid, path string) string {
		data, err := e.ReadFile(context.Background(), guid, path, 1<<10)
		require.NoError(t, err)
		return string(data)
	}
	return e, read
}

func TestImageLayersAreExtractedBeforeTheProcessStarts(t *testing.T) {
	var mu sync.Mutex
	var reqs []steps.DownloadRequest
	dl := steps.DownloaderFunc(func(_ context.Context, req steps.DownloadRequest) (io.ReadCloser, error) {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		return io.NopCloser(bytes.NewReader(tarOf(t, "layer.txt", req.URL))), nil
	})
	e, read := startWithDownloader(t, dl)
	ri := runInfo(run("sleep"))
	ri.ImageLayers = []*modelsv1.ImageLayer{
		{Name: "shared", Url: "http://fs/shared.tgz", DestinationPath: "/opt/shared", LayerType: modelsv1.ImageLayer_LAYER_TYPE_SHARED,
			MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TGZ, DigestAlgorithm: "SHA256", DigestValue: "ABC"},
		{Name: "mine", Url: "http://fs/mine.tgz", DestinationPath: "/opt/mine", LayerType: modelsv1.ImageLayer_LAYER_TYPE_EXCLUSIVE,
			MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TGZ, DigestAlgorithm: "sha512", DigestValue: "def"},
	}
	startContainer(t, e, "g", ri)
	waitState(t, e, "g", executor.StateRunning)
	assert.Equal(t, "http://fs/shared.tgz", read("g", "/opt/shared/layer.txt"))
	assert.Equal(t, "http://fs/mine.tgz", read("g", "/opt/mine/layer.txt"))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []steps.DownloadRequest{
		{URL: "http://fs/shared.tgz", CacheKey: "image-layer-sha256-abc", ChecksumAlgorithm: "SHA256", ChecksumValue: "ABC"},
		{URL: "http://fs/mine.tgz", ChecksumAlgorithm: "sha512", ChecksumValue: "def"},
	}, reqs, "shared layers are cached by digest, exclusive ones are not")
}

func TestImageLayerFailureIsARetryableCrash(t *testing.T) {
	dl := steps.DownloaderFunc(func(context.Context, steps.DownloadRequest) (io.ReadCloser, error) {
		return nil, errors.New("checksum mismatch")
	})
	e, _ := startWithDownloader(t, dl)
	ri := runInfo(run("sleep"))
	ri.ImageLayers = []*modelsv1.ImageLayer{{Name: "bad", Url: "http://fs/bad.tgz", DestinationPath: "/opt",
		LayerType: modelsv1.ImageLayer_LAYER_TYPE_EXCLUSIVE, MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TGZ}}
	startContainer(t, e, "g", ri)
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.True(t, c.RunResult.Failed)
	assert.True(t, c.RunResult.Retryable)
	assert.Equal(t, `failed to download image layers: image layer "bad": checksum mismatch`, c.RunResult.FailureReason)
}
