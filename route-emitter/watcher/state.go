package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"drover.dev/route-emitter/routingtable"
)

// state is what the state file holds: the last applied event sequence, the table, the
// first journal epoch the snapshot does not cover and, until the first sync after a start
// has unregistered what the routers should no longer have, the published set.
type state struct {
	Sequence     *uint64                        `json:"sequence,omitempty"`
	Table        *routingtable.Table            `json:"table"`
	JournalEpoch uint64                         `json:"journal_epoch,omitempty"`
	Published    []routingtable.RegistryMessage `json:"published,omitempty"`
}

// loadState reads path; a missing file is an empty state.
func loadState(path string) (state, error) {
	st := state{Table: routingtable.New()}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return state{Table: routingtable.New()}, fmt.Errorf("state file %s: %w", path, err)
	}
	if st.Table == nil {
		st.Table = routingtable.New()
	}
	return st, nil
}

// saveState writes data to path atomically (temporary file, fsync, rename).
func saveState(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
