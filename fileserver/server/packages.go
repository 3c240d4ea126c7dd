package server

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"

	"drover.dev/fileserver/blobstore"
	"drover.dev/fileserver/resources"
	"drover.dev/fileserver/signedurl"
)

// errBadRequest marks a malformed package request.
var errBadRequest = errors.New("bad request")

// packageForm is a parsed package upload: the resource list and the spooled zip.
type packageForm struct {
	resources []byte
	app       *os.File
	appSize   int64
}

// uploadPackage assembles a package from the posted list, the zip of missing files and
// the pool.
func (s *Server) uploadPackage(w http.ResponseWriter, r *http.Request) {
	if !s.verify(w, r, signedurl.PackagesPath) {
		return
	}
	lim := s.opts.Limits
	body := &trackingReader{r: http.MaxBytesReader(w, r.Body, lim.MaxBytes+s.opts.MaxPackageListBytes+int64(lim.MaxFiles)*1024+1<<20)}
	r.Body = io.NopCloser(body)
	form, err := s.readPackageForm(r)
	defer form.close()
	if err != nil {
		s.uploadFailed(w, r, body.err, err)
		return
	}
	list, err := resources.DecodePackage(form.resources, lim.MaxFiles, lim.MaxBytes)
	var tooMany *resources.TooManyError
	switch {
	case errors.As(err, &tooMany):
		s.refuse(w, r, http.StatusRequestEntityTooLarge, "too-many-resources",
			fmt.Sprintf("resources: more than %d files (max_package_files)", lim.MaxFiles))
		return
	case err != nil:
		s.refuse(w, r, http.StatusBadRequest, "bad-resource", err.Error())
		return
	}
	pkg, err := s.opts.Store.AssemblePackage(list, form.app, form.appSize, lim)
	if err != nil {
		s.uploadFailed(w, r, nil, err)
		return
	}
	s.metrics.UploadBytes.WithLabelValues("package").Add(float64(pkg.ReceivedBytes))
	s.metrics.PackageFiles.WithLabelValues("received").Add(float64(pkg.ReceivedFiles))
	s.metrics.PackageFiles.WithLabelValues("reused").Add(float64(pkg.ReusedFiles))
	s.logger.Info("package-assembled", "key", pkg.Key, "sha256", pkg.SHA256, "size", pkg.Size,
		"received_files", pkg.ReceivedFiles, "received_bytes", pkg.ReceivedBytes, "reused_files", pkg.ReusedFiles)
	writeJSON(w, http.StatusCreated, pkg)
}

// readPackageForm reads the multipart fields "resources" (JSON) and "application" (a
// zip, spooled to a scratch file); other parts are skipped.
func (s *Server) readPackageForm(r *http.Request) (*packageForm, error) {
	form := &packageForm{}
	mr, err := r.MultipartReader()
	if err != nil {
		return form, fmt.Errorf("%w: want multipart/form-data: %v", errBadRequest, err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return form, fmt.Errorf("%w: multipart: %v", errBadRequest, err)
		}
		if err := s.readPart(form, part); err != nil {
			return form, err
		}
	}
	if form.resources == nil {
		return form, fmt.Errorf("%w: missing form field \"resources\"", errBadRequest)
	}
	return form, nil
}

// readPart stores one form part.
func (s *Server) readPart(form *packageForm, part *multipart.Part) error {
	defer part.Close()
	switch part.FormName() {
	case "resources":
		if form.resources != nil {
			return fmt.Errorf("%w: form field \"resources\" given twice", errBadRequest)
		}
		limit := s.opts.MaxPackageListBytes
		data, err := io.ReadAll(io.LimitReader(part, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("resources: more than %d bytes (max_package_list_bytes): %w", limit, blobstore.ErrTooLarge)
		}
		form.resources = data
	case "application":
		if form.app != nil {
			return fmt.Errorf("%w: form field \"application\" given twice", errBadRequest)
		}
		f, err := s.opts.Store.CreateTemp()
		if err != nil {
			return err
		}
		form.app = f
		if form.appSize, err = io.Copy(f, part); err != nil {
			return err
		}
	default:
		_, err := io.Copy(io.Discard, part)
		return err
	}
	return nil
}

// close removes the spooled zip.
func (f *packageForm) close() {
	if f != nil && f.app != nil {
		f.app.Close()
		_ = os.Remove(f.app.Name())
	}
}
