package firewall

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordStoreReportsAndRemovesBadRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := newRecordStore(dir)
	require.NoError(t, err)
	good := record{Guid: "good-1", IP: netip.MustParseAddr("10.0.0.2")}
	require.NoError(t, s.save(good))
	require.NoError(t, s.save(record{Guid: "v6-1", IP: netip.MustParseAddr("fd00::2")}))
	require.NoError(t, s.save(record{Guid: "liar-1", IP: netip.MustParseAddr("10.0.0.3")}))
	require.NoError(t, os.Rename(filepath.Join(dir, "liar-1.json"), filepath.Join(dir, "other-1.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corrupt-1.json"), []byte("{not json"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".cut-1.tmp-9"), []byte("{"), 0o600))

	recs, problems := s.loadAll()
	assert.Equal(t, []record{good}, recs)
	require.Len(t, problems, 3)
	for _, p := range problems {
		assert.ErrorContains(t, p, "firewall record ")
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{"good-1.json"}, left, "bad records and temp files are removed")

	require.NoError(t, s.remove("good-1"))
	require.NoError(t, s.remove("good-1"), "a missing record is fine")
	recs, problems = s.loadAll()
	assert.Empty(t, recs)
	assert.Empty(t, problems)
}
