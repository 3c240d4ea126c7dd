package firewall

import (
	"fmt"
	"net/netip"
	"os"

	"drover.dev/executor/internal/recordfile"
)

// record is what the Firewall keeps on disk for one container: its address and its own
// rules (the cell's defaults come from the config at each rebuild).
type record struct {
	Guid  string     `json:"guid"`
	IP    netip.Addr `json:"ip"`
	Rules []Rule     `json:"rules"`
}

// recordStore keeps one JSON file per guid in a directory.
type recordStore struct{ files recordfile.Store }

func newRecordStore(dir string) (recordStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return recordStore{}, fmt.Errorf("firewall state dir: %w", err)
	}
	return recordStore{files: recordfile.Store{Dir: dir, Kind: "firewall record"}}, nil
}

// save writes r atomically (temp file, fsync, rename).
func (s recordStore) save(r record) error { return s.files.Save(r.Guid, r) }

// remove deletes guid's record; a missing record is fine.
func (s recordStore) remove(guid string) error { return s.files.Remove(guid) }

// loadAll reads every record; one that does not decode is reported and removed (its
// chain goes with the next rebuild).
func (s recordStore) loadAll() ([]record, []error) {
	loaded, err := recordfile.Load(s.files, func(guid string, r record) error {
		if r.Guid != guid || !validName.MatchString(guid) || !r.IP.Is4() {
			return fmt.Errorf("names guid %q with address %s", r.Guid, r.IP)
		}
		return nil
	})
	if err != nil {
		return nil, []error{err}
	}
	var out []record
	var problems []error
	for _, l := range loaded {
		if l.Err != nil {
			problems = append(problems, l.Err)
			if err := s.files.Remove(l.Guid); err != nil {
				problems = append(problems, err)
			}
			continue
		}
		out = append(out, l.Value)
	}
	return out, problems
}
