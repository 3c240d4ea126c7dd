package routingtable

import (
	"encoding/json"
	"sort"
)

// savedProcess is one process in the saved form of the table.
type savedProcess struct {
	Desired *Desired  `json:"desired,omitempty"`
	Actuals []*Actual `json:"actuals,omitempty"`
}

// MarshalJSON saves the whole table (for the state file).
func (t *Table) MarshalJSON() ([]byte, error) {
	saved := make([]savedProcess, 0, len(t.processes))
	for _, guid := range t.ProcessGUIDs() {
		p := t.processes[guid]
		sp := savedProcess{Desired: p.desired}
		for _, a := range p.actuals {
			sp.Actuals = append(sp.Actuals, a)
		}
		sort.Slice(sp.Actuals, func(i, j int) bool {
			a, b := sp.Actuals[i], sp.Actuals[j]
			if a.Index != b.Index {
				return a.Index < b.Index
			}
			return a.Presence < b.Presence
		})
		saved = append(saved, sp)
	}
	return json.Marshal(struct {
		Processes []savedProcess `json:"processes"`
	}{saved})
}

// UnmarshalJSON loads a table saved by MarshalJSON, replacing t's content.
func (t *Table) UnmarshalJSON(data []byte) error {
	var saved struct {
		Processes []savedProcess `json:"processes"`
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		return err
	}
	loaded := New()
	for _, sp := range saved.Processes {
		if sp.Desired != nil {
			loaded.SetDesired(*sp.Desired)
		}
		for _, a := range sp.Actuals {
			if a != nil {
				loaded.SetActual(*a)
			}
		}
	}
	*t = *loaded
	return nil
}
