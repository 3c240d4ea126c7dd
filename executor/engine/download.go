package engine

import (
	"context"
	"io"

	"drover.dev/executor/download"
	"drover.dev/executor/steps"
)

// CacheDownloader adapts the cached downloader (executor/download) to Downloader.
func CacheDownloader(c *download.Cache) Downloader {
	return steps.DownloaderFunc(func(ctx context.Context, req steps.DownloadRequest) (io.ReadCloser, error) {
		return c.Fetch(ctx, download.Request(req))
	})
}
