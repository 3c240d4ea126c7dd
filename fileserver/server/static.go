package server

import (
	"errors"
	"io/fs"
	"net/http"
	"path"
	"syscall"
)

// serveStatic serves a regular file of the static directory through os.Root, which
// refuses any path (or symlink) resolving outside it.
func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request) {
	rel := r.PathValue("path")
	if rel == "" {
		s.refuse(w, r, http.StatusForbidden, "directory-listing", "directory listing refused")
		return
	}
	f, err := s.static.Open(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		http.Error(w, "File not found: "+path.Base(rel), http.StatusNotFound)
		return
	case errors.Is(err, fs.ErrPermission):
		s.fail(w, r, err)
		return
	case err != nil:
		s.refuse(w, r, http.StatusBadRequest, "path-escape", "invalid path: resolves outside the static directory")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if fi.IsDir() {
		s.refuse(w, r, http.StatusForbidden, "directory-listing", "directory listing refused")
		return
	}
	if !fi.Mode().IsRegular() {
		s.refuse(w, r, http.StatusForbidden, "not-a-file", "not a regular file")
		return
	}
	etag, err := s.etags.ETag("static/"+rel, f, fi)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("ETag", etag)
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}
