package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"drover.dev/executor"
)

// record is what the Manager keeps on disk for one container, written before anything is
// created on the host so that a crash at any point leaves enough to tear it down.
type record struct {
	Guid       string                 `json:"guid"`
	NetnsPath  string                 `json:"netns_path"`
	InternalIP string                 `json:"internal_ip,omitempty"`
	ExternalIP string                 `json:"external_ip"`
	Ports      []executor.PortMapping `json:"ports"`
	// Ready is set once the CNI ADD succeeded; a record that is not ready is a setup
	// that was cut short and only good for teardown.
	Ready bool `json:"ready"`
}

// attachment is the record as the package's callers see it.
func (r record) attachment() Attachment {
	return Attachment{
		NetnsPath:  r.NetnsPath,
		InternalIP: r.InternalIP,
		ExternalIP: r.ExternalIP,
		Ports:      append([]executor.PortMapping(nil), r.Ports...),
	}
}

// hostPorts lists the record's host ports.
func (r record) hostPorts() []uint32 {
	out := make([]uint32, 0, len(r.Ports))
	for _, p := range r.Ports {
		out = append(out, p.HostPort)
	}
	return out
}

// recordStore keeps one JSON file per guid in a directory.
type recordStore struct {
	dir string
}

// recordSuffix ends every record file's name.
const recordSuffix = ".json"

func (s recordStore) path(guid string) string {
	return filepath.Join(s.dir, guid+recordSuffix)
}

// save writes r atomically (temp file, fsync, rename).
func (s recordStore) save(r record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode network record %q: %w", r.Guid, err)
	}
	tmp, err := os.CreateTemp(s.dir, "."+r.Guid+".tmp-*")
	if err != nil {
		return fmt.Errorf("write network record %q: %w", r.Guid, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write network record %q: %w", r.Guid, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync network record %q: %w", r.Guid, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write network record %q: %w", r.Guid, err)
	}
	if err := os.Rename(tmp.Name(), s.path(r.Guid)); err != nil {
		return fmt.Errorf("write network record %q: %w", r.Guid, err)
	}
	return nil
}

// remove deletes guid's record; a missing record is fine.
func (s recordStore) remove(guid string) error {
	if err := os.Remove(s.path(guid)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove network record %q: %w", guid, err)
	}
	return nil
}

// loadAll reads every record. A file that does not decode still yields a record for the
// guid in its name (not ready, no ports), so that pruning tears down whatever it left.
func (s recordStore) loadAll() ([]record, []error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, []error{fmt.Errorf("read network records in %s: %w", s.dir, err)}
	}
	var out []record
	var problems []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") {
			os.Remove(filepath.Join(s.dir, name)) // a save cut short by a crash
			continue
		}
		if e.IsDir() || !strings.HasSuffix(name, recordSuffix) || strings.HasPrefix(name, ".") {
			continue
		}
		guid := strings.TrimSuffix(name, recordSuffix)
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		var r record
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err == nil && r.Guid != guid {
			err = fmt.Errorf("names guid %q", r.Guid)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("network record %s: %w", name, err))
			r = record{Guid: guid}
		}
		out = append(out, r)
	}
	return out, problems
}
