package watcher

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/route-emitter/routingtable"
)

func msg(uri string, port uint32) routingtable.RegistryMessage {
	return routingtable.RegistryMessage{Host: "10.0.0.1", Port: port, URIs: []string{uri}, App: "app"}
}

func journalLines(t *testing.T, msgs routingtable.Messages) []byte {
	t.Helper()
	data, err := encodeJournal(msgs)
	require.NoError(t, err)
	return data
}

func ports(ms []routingtable.RegistryMessage) []uint32 {
	out := []uint32{}
	for _, m := range ms {
		out = append(out, m.Port)
	}
	return out
}

func TestParseJournal(t *testing.T) {
	a, b := msg("a.example.com", 1), msg("b.example.com", 2)
	regAB := journalLines(t, routingtable.Messages{Registrations: []routingtable.RegistryMessage{a, b}})
	unregA := journalLines(t, routingtable.Messages{Unregistrations: []routingtable.RegistryMessage{a}})
	tests := []struct {
		name        string
		data        []byte
		wantPorts   []uint32
		wantSkipped int
	}{
		{"empty", nil, []uint32{}, 0},
		{"registers", regAB, []uint32{1, 2}, 0},
		{"an unregister removes", append(append([]byte{}, regAB...), unregA...), []uint32{2}, 0},
		{"torn last line is skipped", append(append([]byte{}, regAB...), unregA[:len(unregA)/2]...), []uint32{1, 2}, 1},
		{"last line without newline is read", append(append([]byte{}, regAB...), unregA[:len(unregA)-1]...), []uint32{2}, 0},
		{"garbage and unknown ops are skipped", append([]byte("garbage\n{\"op\":\"x\",\"msg\":{}}\n\n"), regAB...), []uint32{1, 2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := publishedSet{}
			assert.Equal(t, tt.wantSkipped, parseJournal(tt.data, p))
			assert.Equal(t, tt.wantPorts, ports(p.list()))
		})
	}
}

func TestPublishedSetStale(t *testing.T) {
	a, b, c := msg("a.example.com", 1), msg("b.example.com", 2), msg("c.example.com", 3)
	changed := a
	changed.Tags = map[string]string{"x": "y"} // same identity, other content: still registered
	tests := []struct {
		name    string
		current []routingtable.RegistryMessage
		want    []uint32
	}{
		{"all still registered", []routingtable.RegistryMessage{a, b, c}, []uint32{}},
		{"nothing registered", nil, []uint32{1, 2, 3}},
		{"identity, not content", []routingtable.RegistryMessage{changed}, []uint32{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPublishedSet([]routingtable.RegistryMessage{a, b, c})
			assert.Equal(t, tt.want, ports(append([]routingtable.RegistryMessage{}, p.stale(tt.current)...)))
		})
	}
}

// TestLoadPersistedReplaysUncoveredJournalsInOrder: journals older than the state's epoch
// are ignored, newer ones are replayed in epoch order (an unregister in a later epoch
// removes a register of an earlier one), a torn line is skipped, and the next epoch is
// past every journal found.
func TestLoadPersistedReplaysUncoveredJournalsInOrder(t *testing.T) {
	base := filepath.Join(t.TempDir(), "state.json")
	a, b, c := msg("a.example.com", 1), msg("b.example.com", 2), msg("c.example.com", 3)
	require.NoError(t, saveState(base, []byte(`{"sequence":7,"table":{"processes":[]},"journal_epoch":3,"published":[{"host":"10.0.0.1","port":9,"uris":["kept.example.com"]}]}`)))
	write := func(epoch uint64, data []byte) {
		require.NoError(t, os.WriteFile(journalPath(base, epoch), data, 0o600))
	}
	write(2, journalLines(t, routingtable.Messages{Registrations: []routingtable.RegistryMessage{c}})) // covered
	write(3, journalLines(t, routingtable.Messages{Registrations: []routingtable.RegistryMessage{a, b}}))
	torn := journalLines(t, routingtable.Messages{Unregistrations: []routingtable.RegistryMessage{b}})
	write(10, append(journalLines(t, routingtable.Messages{Unregistrations: []routingtable.RegistryMessage{a}}), torn[:5]...))

	p, err := loadPersisted(base)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), *p.state.Sequence)
	assert.Equal(t, []uint32{2, 9}, ports(p.published.list()))
	assert.Equal(t, 2, p.replayed)
	assert.Equal(t, 1, p.skipped)
	assert.Equal(t, uint64(11), p.nextEpoch)
}

func TestLoadPersistedWithoutFiles(t *testing.T) {
	p, err := loadPersisted(filepath.Join(t.TempDir(), "state.json"))
	require.NoError(t, err)
	assert.Nil(t, p.state.Sequence)
	assert.Empty(t, p.published)
	assert.Equal(t, uint64(0), p.nextEpoch)
}

func TestRemoveJournalsBefore(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "state.json")
	for _, e := range []uint64{1, 4, 12} {
		require.NoError(t, os.WriteFile(journalPath(base, e), nil, 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.json.journal.1"), nil, 0o600))
	require.NoError(t, removeJournalsBefore(base, 5))
	epochs, err := journalEpochs(base)
	require.NoError(t, err)
	assert.Equal(t, []uint64{12}, epochs)
	assert.FileExists(t, filepath.Join(dir, "other.json.journal.1"))
}
