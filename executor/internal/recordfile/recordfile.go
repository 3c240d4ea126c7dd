// Package recordfile keeps one JSON file per guid in a directory: Save writes one
// atomically (temp file, fsync, rename), Remove deletes one, Load reads them all back and
// removes the temp files a save cut short by a crash left behind. The executor's network
// manager and firewall keep their per-container records with it.
package recordfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Suffix ends every record file's name: GUID.json.
const Suffix = ".json"

// tempMarker is in the name of every temp file Save writes: .GUID.tmp-RANDOM.
const tempMarker = ".tmp-"

// Store is a directory of record files of one kind. The directory must exist.
type Store struct {
	// Dir holds the files.
	Dir string
	// Kind names the records in errors, e.g. "network record".
	Kind string
}

// path is where guid's record lives.
func (s Store) path(guid string) string { return filepath.Join(s.Dir, guid+Suffix) }

// checkGuid refuses a guid that is no plain, visible file name; callers validate guids
// by their own rules first, this only keeps every file inside Dir.
func (s Store) checkGuid(guid string) error {
	if guid == "" || guid == "." || guid == ".." || strings.HasPrefix(guid, ".") || strings.ContainsAny(guid, "/\x00") {
		return fmt.Errorf("%s %q: the guid must be a plain file name not starting with a dot", s.Kind, guid)
	}
	return nil
}

// Save writes v, as JSON, as guid's record atomically: a temp file in Dir, fsync, rename.
func (s Store) Save(guid string, v any) error {
	if err := s.checkGuid(guid); err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %q: %w", s.Kind, guid, err)
	}
	tmp, err := os.CreateTemp(s.Dir, "."+guid+tempMarker+"*")
	if err != nil {
		return fmt.Errorf("write %s %q: %w", s.Kind, guid, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s %q: %w", s.Kind, guid, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s %q: %w", s.Kind, guid, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s %q: %w", s.Kind, guid, err)
	}
	if err := os.Rename(tmp.Name(), s.path(guid)); err != nil {
		return fmt.Errorf("write %s %q: %w", s.Kind, guid, err)
	}
	return nil
}

// Remove deletes guid's record; a missing record is fine.
func (s Store) Remove(guid string) error {
	if err := s.checkGuid(guid); err != nil {
		return err
	}
	if err := os.Remove(s.path(guid)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s %q: %w", s.Kind, guid, err)
	}
	return nil
}

// Record is one record file read back: the guid its name carries and its decoded value,
// or Err saying why it is unusable (naming the kind and the file).
type Record[T any] struct {
	Guid  string
	Value T
	Err   error
}

// Load reads every GUID.json file in s.Dir into a T, in name order. A file that cannot be
// read or decoded, or that check (when not nil) refuses, comes back with Err set and
// stays on disk: what to do with it is the caller's. Temp files of a save cut short are
// removed; other dot files, directories and other names are skipped. The error is for a
// directory that cannot be read.
func Load[T any](s Store, check func(guid string, v T) error) ([]Record[T], error) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("read %ss in %s: %w", s.Kind, s.Dir, err)
	}
	var out []Record[T]
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			if strings.Contains(name, tempMarker) && e.Type().IsRegular() {
				os.Remove(filepath.Join(s.Dir, name)) // a save cut short by a crash
			}
			continue
		}
		if e.IsDir() || !strings.HasSuffix(name, Suffix) {
			continue
		}
		r := Record[T]{Guid: strings.TrimSuffix(name, Suffix)}
		data, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err == nil {
			err = json.Unmarshal(data, &r.Value)
		}
		if err == nil && check != nil {
			err = check(r.Guid, r.Value)
		}
		if err != nil {
			r.Err = fmt.Errorf("%s %s: %w", s.Kind, name, err)
		}
		out = append(out, r)
	}
	return out, nil
}
