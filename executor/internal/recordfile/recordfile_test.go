package recordfile

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type thing struct {
	Guid string `json:"guid"`
	N    int    `json:"n"`
}

func newStore(t *testing.T) Store {
	return Store{Dir: t.TempDir(), Kind: "test record"}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestSaveLoadRemove(t *testing.T) {
	s := newStore(t)
	require.NoError(t, s.Save("b", thing{Guid: "b", N: 2}))
	require.NoError(t, s.Save("a", thing{Guid: "a", N: 1}))
	require.NoError(t, s.Save("a", thing{Guid: "a", N: 3}), "a save replaces the record")
	assert.Equal(t, []string{"a.json", "b.json"}, names(t, s.Dir), "no temp file is left behind")

	got, err := Load[thing](s, nil)
	require.NoError(t, err)
	assert.Equal(t, []Record[thing]{
		{Guid: "a", Value: thing{Guid: "a", N: 3}},
		{Guid: "b", Value: thing{Guid: "b", N: 2}},
	}, got)

	require.NoError(t, s.Remove("a"))
	require.NoError(t, s.Remove("a"), "a missing record is fine")
	assert.Equal(t, []string{"b.json"}, names(t, s.Dir))
}

func TestLoadReportsBadFilesAndCleansTempFiles(t *testing.T) {
	s := newStore(t)
	require.NoError(t, s.Save("good", thing{Guid: "good"}))
	require.NoError(t, s.Save("other", thing{Guid: "someone-else"}))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "corrupt.json"), []byte("{not json"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, ".cut.tmp-123"), []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, ".hidden.json"), []byte("{}"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("x"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir, "sub.json"), 0o700))

	got, err := Load(s, func(guid string, v thing) error {
		if v.Guid != guid {
			return assert.AnError
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, "corrupt", got[0].Guid)
	assert.ErrorContains(t, got[0].Err, "test record corrupt.json: ")
	assert.Equal(t, Record[thing]{Guid: "good", Value: thing{Guid: "good"}}, got[1])
	assert.Equal(t, "other", got[2].Guid)
	assert.ErrorIs(t, got[2].Err, assert.AnError)
	assert.ErrorContains(t, got[2].Err, "test record other.json: ")

	assert.Equal(t, []string{".hidden.json", "corrupt.json", "good.json", "notes.txt", "other.json", "sub.json"}, names(t, s.Dir),
		"only the temp file is removed; bad records stay for the caller")
}

func TestLoadOfAMissingDirectory(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "nope"), Kind: "test record"}
	_, err := Load[thing](s, nil)
	assert.ErrorContains(t, err, "read test records in "+s.Dir)
}

func TestRefusesGuidsThatAreNoPlainFileName(t *testing.T) {
	s := newStore(t)
	for _, guid := range []string{"", ".", "..", ".hidden", "a/b", "../escape", "x\x00"} {
		assert.ErrorContains(t, s.Save(guid, thing{}), "the guid must be a plain file name", "%q", guid)
		assert.ErrorContains(t, s.Remove(guid), "the guid must be a plain file name", "%q", guid)
	}
	assert.Empty(t, names(t, s.Dir))
}

func TestErrorsNameTheKind(t *testing.T) {
	s := newStore(t)
	err := s.Save("bad", func() {})
	assert.ErrorContains(t, err, `encode test record "bad"`)

	gone := Store{Dir: filepath.Join(t.TempDir(), "nope"), Kind: "test record"}
	assert.ErrorContains(t, gone.Save("g", thing{}), `write test record "g"`)

	// A directory where the record should be cannot be replaced or removed.
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir, "dir.json"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "dir.json", "x"), nil, 0o600))
	assert.ErrorContains(t, s.Save("dir", thing{}), `write test record "dir"`)
	assert.ErrorContains(t, s.Remove("dir"), `remove test record "dir"`)
	assert.Equal(t, []string{"dir.json"}, names(t, s.Dir), "a failed save leaves no temp file")
}
