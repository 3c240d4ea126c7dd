// Package crypt encrypts BBS data at rest with AES-256-GCM under labelled keys, so
// that several keys can be live at once while the store rotates to a new one.
package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MaxLabelLength is the longest key label a blob can carry (its length is one byte).
const MaxLabelLength = 127

const nonceSize = 12

// Cryptor encrypts with the active key and decrypts with whichever configured key
// a blob names. It is safe for concurrent use.
type Cryptor struct {
	active string
	aeads  map[string]cipher.AEAD
}

// New builds a Cryptor from passphrases by label; the AES-256 key of each label is
// SHA-256(passphrase). activeLabel must be one of the labels.
func New(keys map[string]string, activeLabel string) (*Cryptor, error) {
	if len(keys) == 0 {
		return nil, errors.New("crypt: no encryption keys configured")
	}
	c := &Cryptor{active: activeLabel, aeads: make(map[string]cipher.AEAD, len(keys))}
	for label, passphrase := range keys {
		if err := ValidateLabel(label); err != nil {
			return nil, err
		}
		if passphrase == "" {
			return nil, fmt.Errorf("crypt: key %q has an empty passphrase", label)
		}
		key := sha256.Sum256([]byte(passphrase))
		block, err := aes.NewCipher(key[:])
		if err != nil {
			return nil, fmt.Errorf("crypt: key %q: %w", label, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("crypt: key %q: %w", label, err)
		}
		c.aeads[label] = aead
	}
	if _, ok := c.aeads[activeLabel]; !ok {
		return nil, fmt.Errorf("crypt: active key label %q is not among the configured keys", activeLabel)
	}
	return c, nil
}

// ValidateLabel checks that a key label is non-empty and at most MaxLabelLength bytes.
func ValidateLabel(label string) error {
	if label == "" {
		return errors.New("crypt: key label must not be empty")
	}
	if len(label) > MaxLabelLength {
		return fmt.Errorf("crypt: key label %.20q... is %d bytes, the maximum is %d", label, len(label), MaxLabelLength)
	}
	return nil
}

// ActiveLabel is the label of the key that Encrypt uses.
func (c *Cryptor) ActiveLabel() string { return c.active }

// HasKey reports whether a key with this label is configured.
func (c *Cryptor) HasKey(label string) bool {
	_, ok := c.aeads[label]
	return ok
}

// Encrypt seals plain with the active key and a random 12-byte nonce. The result is
// [1 byte label length][label][nonce][ciphertext with GCM tag].
func (c *Cryptor) Encrypt(plain []byte) ([]byte, error) {
	aead := c.aeads[c.active]
	headerLen := 1 + len(c.active)
	out := make([]byte, headerLen+nonceSize, headerLen+nonceSize+len(plain)+aead.Overhead())
	out[0] = byte(len(c.active))
	copy(out[1:], c.active)
	nonce := out[headerLen : headerLen+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("crypt: reading a random nonce: %w", err)
	}
	return aead.Seal(out, nonce, plain, nil), nil
}

// Decrypt opens a blob made by Encrypt with the key its label names. It fails if the
// label is not configured or the blob was altered.
func (c *Cryptor) Decrypt(blob []byte) ([]byte, error) {
	label, rest, err := splitLabel(blob)
	if err != nil {
		return nil, err
	}
	aead, ok := c.aeads[label]
	if !ok {
		return nil, fmt.Errorf("crypt: no key configured for label %q", label)
	}
	if len(rest) < nonceSize+aead.Overhead() {
		return nil, fmt.Errorf("crypt: blob under key %q is truncated", label)
	}
	plain, err := aead.Open(nil, rest[:nonceSize], rest[nonceSize:], nil)
	if err != nil {
		return nil, fmt.Errorf("crypt: decrypting under key %q: %w", label, err)
	}
	return plain, nil
}

// Label returns the key label stored at the start of an encrypted blob.
func Label(blob []byte) (string, error) {
	label, _, err := splitLabel(blob)
	return label, err
}

func splitLabel(blob []byte) (string, []byte, error) {
	if len(blob) == 0 {
		return "", nil, errors.New("crypt: empty blob")
	}
	n := int(blob[0])
	if n == 0 || n > MaxLabelLength || len(blob) < 1+n {
		return "", nil, errors.New("crypt: blob has a malformed key label")
	}
	return string(blob[1 : 1+n]), blob[1+n:], nil
}
