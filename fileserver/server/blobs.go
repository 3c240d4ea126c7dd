package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"drover.dev/fileserver/blobstore"
	"drover.dev/fileserver/signedurl"
)

// downloadBlob serves a stored blob; no signature is needed.
func (s *Server) downloadBlob(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	f, fi, err := s.opts.Store.OpenBlob(key)
	if errors.Is(err, blobstore.ErrNotFound) {
		http.Error(w, "blob not found: "+key, http.StatusNotFound)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer f.Close()
	etag, err := s.etags.ETag("blobs/"+key, f, fi)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("ETag", etag)
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

// uploadBlob stores the body under key once the signed URL and checksums check out.
func (s *Server) uploadBlob(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if err := blobstore.ValidateKey(key); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "bad-key", err.Error())
		return
	}
	if !s.verify(w, r, signedurl.BlobPath(key)) {
		return
	}
	want, err := expectedChecksums(r.Header)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "bad-checksum-header", err.Error())
		return
	}
	if err := s.opts.Store.CheckKey(key); err != nil {
		s.uploadFailed(w, r, nil, err)
		return
	}
	if r.ContentLength > s.opts.MaxBlobBytes {
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "too-large", fmt.Sprintf("blob larger than max_blob_bytes (%d bytes)", s.opts.MaxBlobBytes))
		return
	}
	body := &trackingReader{r: http.MaxBytesReader(w, r.Body, s.opts.MaxBlobBytes)}
	info, err := s.opts.Store.Put(key, body, want, s.opts.MaxBlobBytes)
	if err != nil {
		s.uploadFailed(w, r, body.err, err)
		return
	}
	s.metrics.UploadBytes.WithLabelValues("blob").Add(float64(info.Size))
	s.logger.Info("blob-stored", "key", info.Key, "size", info.Size, "sha256", info.SHA256)
	writeJSON(w, http.StatusCreated, info)
}

// verify checks the request's signed URL for path, refusing it when invalid.
func (s *Server) verify(w http.ResponseWriter, r *http.Request, path string) bool {
	err := signedurl.Verify(s.opts.SigningKey, path, r.URL.Query(), s.opts.Now())
	switch {
	case err == nil:
		return true
	case errors.Is(err, signedurl.ErrExpired):
		s.refuse(w, r, http.StatusForbidden, "expired", "signed URL expired")
	default:
		s.refuse(w, r, http.StatusForbidden, "bad-signature", "invalid signature")
	}
	return false
}

// expectedChecksums reads Content-MD5 (base64) and X-Checksum-Sha256 (hex).
func expectedChecksums(h http.Header) (blobstore.Expected, error) {
	md5, err := blobstore.ParseContentMD5(h.Get("Content-MD5"))
	if err != nil {
		return blobstore.Expected{}, err
	}
	sha := h.Get("X-Checksum-Sha256")
	if sha != "" && !isHex(sha, 64) {
		return blobstore.Expected{}, errors.New("X-Checksum-Sha256: want 64 hex digits, got " + sha)
	}
	return blobstore.Expected{MD5: md5, SHA256: sha}, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// uploadFailed maps a failed upload to its answer: readErr is the body's read error,
// if any (a cut-off body or one over its limit).
func (s *Server) uploadFailed(w http.ResponseWriter, r *http.Request, readErr, err error) {
	var checksum *blobstore.ChecksumError
	var tooLarge *http.MaxBytesError
	var missing *blobstore.MissingResourceError
	var bad *blobstore.BadUploadError
	var conflict *blobstore.ConflictError
	switch {
	case errors.As(err, &conflict):
		s.refuse(w, r, http.StatusConflict, "key-conflict", conflict.Error())
	case errors.As(err, &checksum):
		s.refuse(w, r, http.StatusBadRequest, "checksum-mismatch", checksum.Error())
	case errors.As(readErr, &tooLarge) || errors.Is(err, blobstore.ErrTooLarge):
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "too-large", "upload too large: "+err.Error())
	case readErr != nil:
		s.refuse(w, r, http.StatusBadRequest, "interrupted", "upload interrupted: "+readErr.Error())
	case errors.As(err, &missing):
		s.refuse(w, r, http.StatusUnprocessableEntity, "missing-resource", missing.Error())
	case errors.As(err, &bad):
		s.refuse(w, r, http.StatusBadRequest, "bad-upload", bad.Error())
	case errors.Is(err, errBadRequest):
		s.refuse(w, r, http.StatusBadRequest, "bad-request", err.Error())
	default:
		s.fail(w, r, err)
	}
}

// trackingReader remembers the first read error other than io.EOF.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
