package sim

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"drover.dev/executor/internal/archivepolicy"
)

// StreamIn keeps the regular files of a tar stream in memory under dir; entries must
// pass archivepolicy.Check, as on a real cell.
func (r *Runtime) StreamIn(ctx context.Context, guid, dir, user string, tarStream io.Reader) error {
	tr := tar.NewReader(tarStream)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading tar stream: %w", err)
		}
		entry, err := archivepolicy.Check(dir, h)
		if err != nil {
			return fmt.Errorf("stream in %s: %w", path.Clean("/"+dir), err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("reading %s: %w", h.Name, err)
		}
		files[path.Join("/", dir, entry.Name)] = data
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.get(guid)
	if err != nil {
		return err
	}
	for p, d := range files {
		c.files[p] = d
	}
	return nil
}

// WriteFile puts a file into a container (a test hook).
func (r *Runtime) WriteFile(guid, p string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.get(guid)
	if err != nil {
		return err
	}
	c.files[path.Clean("/"+p)] = append([]byte(nil), data...)
	return nil
}

// StreamOut returns a tar stream of the file at p, or of the files under directory p.
func (r *Runtime) StreamOut(ctx context.Context, guid, p string) (io.ReadCloser, error) {
	p = path.Clean("/" + p)
	r.mu.Lock()
	c, err := r.get(guid)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	type entry struct {
		name string
		data []byte
	}
	var entries []entry
	if d, ok := c.files[p]; ok {
		entries = append(entries, entry{path.Base(p), d})
	} else {
		for name, d := range c.files {
			if rel, ok := strings.CutPrefix(name, strings.TrimSuffix(p, "/")+"/"); ok {
				entries = append(entries, entry{rel, d})
			}
		}
	}
	r.mu.Unlock()
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no such file or directory", p)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
