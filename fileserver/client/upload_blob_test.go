package client_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/client"
)

func TestUploadBlob(t *testing.T) {
	c, base := serve(t)
	ctx := context.Background()
	require.NoError(t, c.UploadBlob(ctx, "buildpacks/bookworm/go-abc.zip", strings.NewReader("archive-1"), 9))
	require.NoError(t, c.UploadBlob(ctx, "buildpacks/bookworm/go-abc.zip", strings.NewReader("archive-2"), 9), "replacing")
	resp, err := http.Get(c.BlobURL("buildpacks/bookworm/go-abc.zip"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "archive-2", string(body))

	err = c.UploadBlob(ctx, "bad/../key", strings.NewReader("x"), 1)
	assert.ErrorContains(t, err, "400")
	wrong := client.New(base, []byte("some-other-key-0123456789"), nil)
	assert.ErrorContains(t, wrong.UploadBlob(ctx, "buildpacks/x.zip", strings.NewReader("x"), 1), "403 Forbidden")
}
