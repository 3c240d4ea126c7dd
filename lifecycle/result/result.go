// Package result defines the staging result the lifecycle builder writes (result.json)
// and the stager reads: the buildpack that staged the app, its start command and process
// types, and the droplet's checksum and size. Parse is the bounded, validating reader.
package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Limits on a result; Parse rejects anything beyond them.
const (
	MaxBytes        = 64 << 10 // the whole JSON document
	MaxNameLen      = 255      // a buildpack or process type name
	MaxCommandLen   = 4096     // a command or the detect output
	MaxProcessTypes = 32
	MaxBuildpacks   = 32
)

// Result is what a successful staging produced. StartCommand is ProcessTypes["web"].
type Result struct {
	Buildpack     string            `json:"buildpack"`
	Buildpacks    []string          `json:"buildpacks"`
	DetectOutput  string            `json:"detect_output"`
	StartCommand  string            `json:"start_command"`
	ProcessTypes  map[string]string `json:"process_types"`
	DropletSHA256 string            `json:"droplet_sha256"`
	DropletSize   int64             `json:"droplet_size"`
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Parse decodes and validates a result document. Its error names every bad field and
// the rule it breaks.
func Parse(b []byte) (Result, error) {
	var r Result
	if len(b) > MaxBytes {
		return r, fmt.Errorf("staging result: %d bytes is more than the limit of %d", len(b), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Result{}, fmt.Errorf("staging result: not valid JSON: %w", err)
	}
	if dec.More() {
		return Result{}, errors.New("staging result: trailing data after the JSON object")
	}
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	return r, nil
}

// Validate checks every field of r and returns one error naming all bad fields.
func (r Result) Validate() error {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	checkText := func(field, v string, max int, required bool) {
		switch {
		case v == "" && required:
			add("%s: required", field)
		case len(v) > max:
			add("%s: %d bytes is longer than %d", field, len(v), max)
		case !utf8.ValidString(v):
			add("%s: not valid UTF-8", field)
		case strings.ContainsRune(v, 0):
			add("%s: contains a NUL byte", field)
		}
	}
	checkText("buildpack", r.Buildpack, MaxNameLen, true)
	if len(r.Buildpacks) > MaxBuildpacks {
		add("buildpacks: %d entries is more than %d", len(r.Buildpacks), MaxBuildpacks)
	} else {
		for i, b := range r.Buildpacks {
			checkText(fmt.Sprintf("buildpacks[%d]", i), b, MaxNameLen, true)
		}
	}
	checkText("detect_output", r.DetectOutput, MaxCommandLen, false)
	checkText("start_command", r.StartCommand, MaxCommandLen, true)
	if len(r.ProcessTypes) > MaxProcessTypes {
		add("process_types: %d entries is more than %d", len(r.ProcessTypes), MaxProcessTypes)
	} else {
		names := make([]string, 0, len(r.ProcessTypes))
		for name := range r.ProcessTypes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			checkText(fmt.Sprintf("process_types key %q", name), name, MaxNameLen, true)
			checkText(fmt.Sprintf("process_types[%q]", name), r.ProcessTypes[name], MaxCommandLen, true)
		}
	}
	if web, ok := r.ProcessTypes["web"]; !ok {
		add(`process_types: needs a "web" command`)
	} else if r.StartCommand != "" && web != r.StartCommand {
		add(`start_command: must equal process_types["web"]`)
	}
	if !sha256Hex.MatchString(r.DropletSHA256) {
		add("droplet_sha256: must be 64 lowercase hex digits")
	}
	if r.DropletSize <= 0 {
		add("droplet_size: must be positive")
	}
	if len(bad) > 0 {
		return errors.New("staging result: " + strings.Join(bad, "; "))
	}
	return nil
}

// Marshal encodes r as the JSON document Parse reads.
func (r Result) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}
