package devstack

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
)

// writeConfig stores a configuration as JSON at path, readable only by its owner (a
// BBS's holds the encryption passphrases). <, > and & are written as they are, not as
// \u escapes (nats-server's configuration parser knows no \u; multihost).
func writeConfig(path string, cfg any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// NewPassphrase returns a random encryption passphrase.
func NewPassphrase() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("encryption passphrase: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// loadOrCreatePassphrase keeps the dev stack's encryption passphrase in path, so data
// written by one `up` stays readable by the next.
func loadOrCreatePassphrase(path string) (string, error) {
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		return string(data), nil
	}
	pass, err := NewPassphrase()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(pass), 0o600); err != nil {
		return "", fmt.Errorf("write encryption passphrase: %w", err)
	}
	return pass, nil
}
