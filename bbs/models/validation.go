package models

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Limits enforced by validation, as in Diego.
const (
	// MaxAnnotationLength is the longest annotation of a DesiredLRP, update or task, in bytes.
	MaxAnnotationLength = 10 * 1024
	// MaxRoutesLength is the longest total JSON encoding of all router values of routes, in bytes.
	MaxRoutesLength = 128 * 1024
	// MaxVolumeMountedFilesLength is the largest total content of volume_mounted_files, in bytes.
	MaxVolumeMountedFilesLength = 1024 * 1024
	maxPort                     = 65535
)

// guidPattern is what process and task guids must match.
var guidPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Rules, worded the way they appear in error messages.
const (
	ruleRequired    = "required"
	ruleNonNegative = "must be >= 0"
	rulePositive    = "must be > 0"
	rulePort        = "must be between 1 and 65535"
)

// violations collects every rule violation of one request so that a client
// learns about all of them at once.
type violations struct {
	list []string
}

// add records that the field at path breaks rule.
func (v *violations) add(path, rule string) {
	v.list = append(v.list, "invalid field "+path+": "+rule)
}

// addf records a rule built from a format.
func (v *violations) addf(path, format string, args ...any) {
	v.add(path, fmt.Sprintf(format, args...))
}

// err is nil without violations, else one InvalidRequest error naming them all.
func (v *violations) err() error {
	if len(v.list) == 0 {
		return nil
	}
	return &Error{Type: ErrTypeInvalidRequest, Message: strings.Join(v.list, "; ")}
}

// field joins a parent path and a field name ("setup" + "run" = "setup.run").
func field(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// item names the i-th element of a repeated field ("actions[1]").
func item(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// entry names the value of a map field under key ("metric_tags[source_id]").
func entry(parent, key string) string {
	return parent + "[" + key + "]"
}

// required checks that s is not empty.
func (v *violations) required(path, s string) {
	if s == "" {
		v.add(path, ruleRequired)
	}
}

// nonNegative checks that n >= 0.
func (v *violations) nonNegative(path string, n int64) {
	if n < 0 {
		v.add(path, ruleNonNegative)
	}
}

// guid checks a process or task guid against guidPattern.
func (v *violations) guid(path, s string) {
	if !guidPattern.MatchString(s) {
		v.add(path, "must match "+guidPattern.String())
	}
}

// annotation checks the annotation size limit.
func (v *violations) annotation(path, s string) {
	if len(s) > MaxAnnotationLength {
		v.addf(path, "must be at most %d bytes", MaxAnnotationLength)
	}
}

// port checks that p is a usable TCP/UDP port.
func (v *violations) port(path string, p uint32) {
	if p < 1 || p > maxPort {
		v.add(path, rulePort)
	}
}

// together checks that two fields are either both set or both empty.
func (v *violations) together(parent, nameA, a, nameB, b string) {
	switch {
	case a != "" && b == "":
		v.add(field(parent, nameB), "required when "+nameA+" is set")
	case a == "" && b != "":
		v.add(field(parent, nameA), "required when "+nameB+" is set")
	}
}

// oneOf checks that s is one of allowed (compared case-insensitively when fold is set).
func (v *violations) oneOf(path, s string, fold bool, allowed ...string) {
	for _, a := range allowed {
		if s == a || (fold && strings.EqualFold(s, a)) {
			return
		}
	}
	v.add(path, "must be one of "+strings.Join(allowed, ", "))
}
