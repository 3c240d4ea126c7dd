// Package config loads a drover process's single JSON configuration file: unknown
// fields are errors that name the field, and the result is validated before use.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"

	"drover.dev/lib/tlsconfig"
)

// Validator is a configuration that can check itself after loading.
type Validator interface {
	Validate() error
}

// Load reads the JSON file at path into `into` (whose existing values act as defaults),
// refusing unknown fields and trailing data, then calls into.Validate.
func Load(path string, into Validator) error {
	if into == nil {
		return errors.New("config: nil destination")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := Decode(data, into); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if err := into.Validate(); err != nil {
		return fmt.Errorf("config %s: invalid: %w", path, err)
	}
	return nil
}

// LoadOver loads the file at path over a copy of defaults (see Load) and returns the
// result: the Load of every drover service's config package.
func LoadOver[C any, P interface {
	*C
	Validator
}](path string, defaults C) (*C, error) {
	cfg := defaults
	if err := Load(path, P(&cfg)); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Decode strictly unmarshals one JSON object from data into v: unknown fields and
// trailing data are errors, and syntax and type errors carry their line number.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(data, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// describe adds the line number to decoding errors, which carry at most an offset, and
// names the field for errors from custom unmarshalers (such as Duration's), which do not.
func describe(data []byte, offset int64, err error) error {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("empty file: want a JSON object")
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("line %d: %w", lineOf(data, syntaxErr.Offset), err)
	case errors.As(err, &typeErr):
		return fmt.Errorf("line %d: %w", lineOf(data, typeErr.Offset), err)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return err
	}
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if keys := lastKey.FindAllSubmatch(data[:offset], -1); len(keys) > 0 {
		return fmt.Errorf("line %d: field %s: %w", lineOf(data, offset), keys[len(keys)-1][1], err)
	}
	return fmt.Errorf("line %d: %w", lineOf(data, offset), err)
}

// lastKey matches an object key and its colon: the last match before the offset of a
// failed value names the field being decoded.
var lastKey = regexp.MustCompile(`("(?:[^"\\]|\\.)*")\s*:`)

func lineOf(data []byte, offset int64) int {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// FieldError is a validation failure of one named configuration field.
type FieldError struct {
	Field  string
	Reason string
}

// Error reads "<field>: <reason>".
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Invalid returns a *FieldError for field with a formatted reason.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// OptionalTLS checks the certificate files of field when any is set (TLS is on): all
// three are then required. Nothing set is valid (TLS off).
func OptionalTLS(field string, files tlsconfig.Files) error {
	if !files.Enabled() {
		return nil
	}
	if err := files.Validate(); err != nil {
		return Invalid(field, "%v", err)
	}
	return nil
}

// Addresses checks each {field, address} pair with Address and returns the errors, in
// order.
func Addresses(pairs [][2]string) []error {
	var errs []error
	for _, p := range pairs {
		if err := Address(p[0], p[1]); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Address checks that address is a host:port, naming field when it is not.
func Address(field, address string) error {
	if address == "" {
		return Invalid(field, "is required")
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return Invalid(field, "must be host:port, got %q", address)
	}
	return nil
}
