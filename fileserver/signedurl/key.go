package signedurl

import (
	"fmt"
	"os"
	"strings"
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 16

// ReadKey reads a signing key file: its content without surrounding white space,
// at least MinKeyBytes long.
func ReadKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key := []byte(strings.TrimSpace(string(data)))
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("key must be at least %d bytes, got %d in %s", MinKeyBytes, len(key), path)
	}
	return key, nil
}
