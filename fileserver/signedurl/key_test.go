package signedurl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/signedurl"
)

func TestReadKey(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	require.NoError(t, os.WriteFile(good, []byte("  0123456789abcdef0123\n"), 0o600))
	key, err := signedurl.ReadKey(good)
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123", string(key))

	short := filepath.Join(dir, "short.key")
	require.NoError(t, os.WriteFile(short, []byte("short          \n"), 0o600))
	_, err = signedurl.ReadKey(short)
	require.EqualError(t, err, "key must be at least 16 bytes, got 5 in "+short)

	_, err = signedurl.ReadKey(filepath.Join(dir, "missing.key"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
