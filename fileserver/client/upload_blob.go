package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// blobUploadTTL is how long UploadBlob's signed URL is valid.
const blobUploadTTL = 15 * time.Minute

// UploadBlob stores size bytes of body under key through a signed upload URL (PUT),
// replacing any blob there (the server answers 201).
func (c *Client) UploadBlob(ctx context.Context, key string, body io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.SignedUploadURL(key, blobUploadTTL), body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("fileserver: PUT %s: %w", key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("fileserver: PUT %s: %s: %s", key, resp.Status, string(msg))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}
