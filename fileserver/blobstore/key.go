package blobstore

import (
	"fmt"
	"strings"
)

// MaxKeyBytes bounds a blob key.
const MaxKeyBytes = 256

// ValidateKey accepts slash-separated segments of [A-Za-z0-9._-], none empty, "." or
// "..", at most MaxKeyBytes in all.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("blob key is required")
	}
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("blob key longer than %d bytes", MaxKeyBytes)
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("blob key %q: empty segment", key)
		case ".", "..":
			return fmt.Errorf("blob key %q: %q segment", key, seg)
		}
		for _, c := range seg {
			if !keyChar(c) {
				return fmt.Errorf("blob key %q: character %q not allowed (want A-Z a-z 0-9 . _ -)", key, c)
			}
		}
	}
	return nil
}

func keyChar(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
