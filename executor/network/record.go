package network

import (
	"fmt"

	"drover.dev/executor"
	"drover.dev/executor/internal/recordfile"
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
	files recordfile.Store
}

func newRecordStore(dir string) recordStore {
	return recordStore{files: recordfile.Store{Dir: dir, Kind: "network record"}}
}

// save writes r atomically (temp file, fsync, rename).
func (s recordStore) save(r record) error { return s.files.Save(r.Guid, r) }

// remove deletes guid's record; a missing record is fine.
func (s recordStore) remove(guid string) error { return s.files.Remove(guid) }

// loadAll reads every record. A file that does not decode still yields a record for the
// guid in its name (not ready, no ports), so that pruning tears down whatever it left.
func (s recordStore) loadAll() ([]record, []error) {
	loaded, err := recordfile.Load(s.files, func(guid string, r record) error {
		if r.Guid != guid {
			return fmt.Errorf("names guid %q", r.Guid)
		}
		return nil
	})
	if err != nil {
		return nil, []error{err}
	}
	out := make([]record, 0, len(loaded))
	var problems []error
	for _, l := range loaded {
		r := l.Value
		if l.Err != nil {
			problems = append(problems, l.Err)
			r = record{Guid: l.Guid}
		}
		out = append(out, r)
	}
	return out, problems
}
