package crypt_test

import (
	"bytes"
	"strings"
	"testing"

	"drover.dev/bbs/crypt"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	c, err := crypt.New(map[string]string{"k1": "secret one"}, "k1")
	require.NoError(t, err)
	require.Equal(t, "k1", c.ActiveLabel())

	for _, plain := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("payload "), 10000)} {
		blob, err := c.Encrypt(plain)
		require.NoError(t, err)
		require.False(t, len(plain) > 8 && bytes.Contains(blob, plain[:8]), "plaintext leaked into blob")
		label, err := crypt.Label(blob)
		require.NoError(t, err)
		require.Equal(t, "k1", label)
		got, err := c.Decrypt(blob)
		require.NoError(t, err)
		require.Equal(t, len(plain), len(got))
		require.True(t, bytes.Equal(plain, got))
	}
}

func TestNoncesDiffer(t *testing.T) {
	c, err := crypt.New(map[string]string{"k1": "secret"}, "k1")
	require.NoError(t, err)
	a, err := c.Encrypt([]byte("same"))
	require.NoError(t, err)
	b, err := c.Encrypt([]byte("same"))
	require.NoError(t, err)
	require.NotEqual(t, a, b)
}

func TestBlobLayout(t *testing.T) {
	c, err := crypt.New(map[string]string{"abc": "secret"}, "abc")
	require.NoError(t, err)
	blob, err := c.Encrypt([]byte("hello"))
	require.NoError(t, err)
	require.Equal(t, byte(3), blob[0])
	require.Equal(t, "abc", string(blob[1:4]))
	// label + 12-byte nonce + 5 bytes ciphertext + 16-byte tag
	require.Len(t, blob, 1+3+12+5+16)
}

func TestUnknownLabel(t *testing.T) {
	old, err := crypt.New(map[string]string{"old": "one"}, "old")
	require.NoError(t, err)
	blob, err := old.Encrypt([]byte("data"))
	require.NoError(t, err)

	other, err := crypt.New(map[string]string{"new": "two"}, "new")
	require.NoError(t, err)
	_, err = other.Decrypt(blob)
	require.ErrorContains(t, err, `"old"`)
	require.False(t, other.HasKey("old"))
}

func TestTamperDetection(t *testing.T) {
	c, err := crypt.New(map[string]string{"k": "secret"}, "k")
	require.NoError(t, err)
	blob, err := c.Encrypt([]byte("important data"))
	require.NoError(t, err)

	for i := 2; i < len(blob); i++ { // every byte after the label
		tampered := bytes.Clone(blob)
		tampered[i] ^= 0x01
		_, err := c.Decrypt(tampered)
		require.Error(t, err, "byte %d flipped", i)
	}
	_, err = c.Decrypt(blob[:len(blob)-1])
	require.Error(t, err)
	_, err = c.Decrypt(blob[:10])
	require.Error(t, err)

	// Same label, different passphrase: authentication fails.
	impostor, err := crypt.New(map[string]string{"k": "other secret"}, "k")
	require.NoError(t, err)
	_, err = impostor.Decrypt(blob)
	require.Error(t, err)
}

func TestRotation(t *testing.T) {
	before, err := crypt.New(map[string]string{"v1": "first"}, "v1")
	require.NoError(t, err)
	oldBlob, err := before.Encrypt([]byte("kept across rotation"))
	require.NoError(t, err)

	after, err := crypt.New(map[string]string{"v1": "first", "v2": "second"}, "v2")
	require.NoError(t, err)
	got, err := after.Decrypt(oldBlob)
	require.NoError(t, err)
	require.Equal(t, "kept across rotation", string(got))

	newBlob, err := after.Encrypt(got)
	require.NoError(t, err)
	label, err := crypt.Label(newBlob)
	require.NoError(t, err)
	require.Equal(t, "v2", label)
	_, err = before.Decrypt(newBlob)
	require.ErrorContains(t, err, `"v2"`)
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name   string
		keys   map[string]string
		active string
		want   string
	}{
		{"no keys", nil, "a", "no encryption keys"},
		{"empty label", map[string]string{"": "x"}, "", "must not be empty"},
		{"long label", map[string]string{strings.Repeat("l", 128): "x"}, strings.Repeat("l", 128), "maximum is 127"},
		{"empty passphrase", map[string]string{"a": ""}, "a", "empty passphrase"},
		{"active missing", map[string]string{"a": "x"}, "b", "not among"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := crypt.New(tt.keys, tt.active)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := crypt.New(map[string]string{strings.Repeat("l", 127): "x"}, strings.Repeat("l", 127))
	require.NoError(t, err)
}

func TestMalformedBlobs(t *testing.T) {
	c, err := crypt.New(map[string]string{"k": "secret"}, "k")
	require.NoError(t, err)
	for _, blob := range [][]byte{nil, {}, {0}, {5, 'a'}, {200, 'a'}} {
		_, err := c.Decrypt(blob)
		require.Error(t, err)
	}
}
