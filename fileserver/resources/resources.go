// Package resources is the pure part of resource matching (seed 004): the file
// descriptors a client lists, their JSON decoding and the rules each entry must follow.
package resources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// Resource describes one file of an app package.
type Resource struct {
	// Path is the file's slash-separated path relative to the app root ("fn").
	Path string `json:"fn,omitempty"`
	// SHA1 is the lowercase hex SHA-1 of the content.
	SHA1 string `json:"sha1"`
	// Size is the content length in bytes.
	Size int64 `json:"size"`
	// Mode is the octal permission string ("0644", "0755").
	Mode string `json:"mode,omitempty"`
}

// DefaultMode is the mode of a listed file without one.
const DefaultMode = "0644"

// MaxPathBytes bounds one fn.
const MaxPathBytes = 4096

// TooManyError: a list has more entries than its limit (decoding stops there).
type TooManyError struct{ Limit int }

func (e *TooManyError) Error() string {
	return fmt.Sprintf("resources: more than %d entries", e.Limit)
}

// DecodeMatch decodes a resource_match body: a JSON array of at most maxEntries
// entries (more is a *TooManyError), each with a valid sha1 and a non-negative size (fn
// and mode are ignored). Errors name the entry index and field.
func DecodeMatch(data []byte, maxEntries int) ([]Resource, error) {
	list, err := decode(data, maxEntries)
	if err != nil {
		return nil, err
	}
	for i, r := range list {
		if err := checkContent(r); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return list, nil
}

// DecodePackage decodes the "resources" field of a package upload: every entry needs a
// clean relative fn (no "..", not absolute, not repeated), a sha1, a size and an octal
// mode (defaulted to 0644); at most maxFiles entries (more is a *TooManyError) whose
// sizes sum to at most maxBytes.
func DecodePackage(data []byte, maxFiles int, maxBytes int64) ([]Resource, error) {
	list, err := decode(data, maxFiles)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(list))
	var total int64
	for i := range list {
		r := &list[i]
		if err := CheckPath(r.Path); err != nil {
			return nil, fmt.Errorf("entry %d: fn %q: %w", i, r.Path, err)
		}
		if seen[r.Path] {
			return nil, fmt.Errorf("entry %d: fn %q: listed twice", i, r.Path)
		}
		seen[r.Path] = true
		if err := checkContent(*r); err != nil {
			return nil, fmt.Errorf("entry %d (fn %q): %w", i, r.Path, err)
		}
		if r.Mode == "" {
			r.Mode = DefaultMode
		}
		if _, err := ParseMode(r.Mode); err != nil {
			return nil, fmt.Errorf("entry %d (fn %q): mode: %w", i, r.Path, err)
		}
		total += r.Size
		if total > maxBytes {
			return nil, fmt.Errorf("resources: files sum to more than the limit of %d bytes", maxBytes)
		}
	}
	return list, nil
}

// CheckPath accepts a clean, relative, slash-separated file path without "." or ".."
// segments.
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("is required")
	case len(p) > MaxPathBytes:
		return fmt.Errorf("longer than %d bytes", MaxPathBytes)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("must be relative, not absolute")
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("must not contain a backslash or NUL")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("must not contain a \"..\" segment")
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("must be a clean path (no empty or \".\" segments, no trailing slash)")
	}
	return nil
}

// ParseMode parses an octal permission string ("644", "0755") of at most 0777.
func ParseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("want an octal permission such as \"0644\", got %q", s)
	}
	return uint32(m), nil
}

// IsSHA1 reports whether s is 40 lowercase hex digits.
func IsSHA1(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// decode parses a JSON array of at most max resources (unknown fields are ignored),
// one entry at a time: it stops at the first entry over max.
func decode(data []byte, max int) ([]Resource, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	switch {
	case err != nil:
		return nil, notAnArray(err)
	case tok == nil:
		return nil, fmt.Errorf("resources: want a JSON array, got null")
	case tok != json.Delim('['):
		return nil, notAnArray(fmt.Errorf("got %v", tok))
	}
	list := []Resource{}
	for dec.More() {
		if len(list) == max {
			return nil, &TooManyError{Limit: max}
		}
		var r Resource
		if err := dec.Decode(&r); err != nil {
			return nil, notAnArray(err)
		}
		list = append(list, r)
	}
	if _, err := dec.Token(); err != nil {
		return nil, notAnArray(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notAnArray(errors.New("data after the array"))
	}
	return list, nil
}

func notAnArray(err error) error {
	return fmt.Errorf("resources: want a JSON array of {\"fn\",\"sha1\",\"size\",\"mode\"}: %w", err)
}

// checkContent checks the sha1 and size of one entry.
func checkContent(r Resource) error {
	if !IsSHA1(r.SHA1) {
		return fmt.Errorf("sha1: want 40 lowercase hex digits, got %q", r.SHA1)
	}
	if r.Size < 0 {
		return fmt.Errorf("size: must not be negative, got %d", r.Size)
	}
	return nil
}
