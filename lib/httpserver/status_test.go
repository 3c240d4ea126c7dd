package httpserver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/httpserver"
)

func TestStatusRecorder(t *testing.T) {
	rec := &httpserver.StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	require.Zero(t, rec.Status)
	rec.WriteHeader(http.StatusNotFound)
	rec.WriteHeader(http.StatusOK)
	require.Equal(t, http.StatusNotFound, rec.Status, "the first status counts")

	implicit := &httpserver.StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	_, err := implicit.Write([]byte("body"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, implicit.Status)
	require.NoError(t, http.NewResponseController(implicit).Flush(), "Unwrap reaches the flusher")
}
