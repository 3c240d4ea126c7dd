package models

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPort is the highest TCP and UDP port.
const maxPort = 65535

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
	// paths are the fields that broke a rule, so that the generic string bounds do not
	// report a field again that a specific rule already refused.
	paths map[string]bool
	// imageUser is set while checking a container whose rootfs is a docker image: its
	// run actions may leave user empty to run as the image's USER.
	imageUser bool
}

// add records that the field at path breaks rule.
func (v *violations) add(path, rule string) {
	v.list = append(v.list, "invalid field "+path+": "+rule)
	if v.paths == nil {
		v.paths = make(map[string]bool)
	}
	v.paths[path] = true
}

// addf records a rule built from a format.
func (v *violations) addf(path, format string, args ...any) {
	v.add(path, fmt.Sprintf(format, args...))
}

// reported tells whether the field at path already broke a rule.
func (v *violations) reported(path string) bool { return v.paths[path] }

// err is nil without violations, else one InvalidRequest error naming them all (the
// first maxReportedViolations, and how many more there are).
func (v *violations) err() error {
	if len(v.list) == 0 {
		return nil
	}
	list := v.list
	if len(list) > maxReportedViolations {
		list = append(list[:maxReportedViolations:maxReportedViolations],
			fmt.Sprintf("and %d more violations", len(v.list)-maxReportedViolations))
	}
	return &Error{Type: ErrTypeInvalidRequest, Message: strings.Join(list, "; ")}
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

// maxKeyInPath is how much of a map key a field path shows.
const maxKeyInPath = 64

// entry names the value of a map field under key ("metric_tags[source_id]"). A key
// that is long or holds control characters is shown quoted and cut, so that error
// messages stay short and printable.
func entry(parent, key string) string {
	if len(key) <= maxKeyInPath && controlCharAt(key) < 0 {
		return parent + "[" + key + "]"
	}
	if len(key) > maxKeyInPath {
		key = strings.ToValidUTF8(key[:maxKeyInPath], "") + "..."
	}
	return parent + "[" + strconv.Quote(key) + "]"
}

// controlCharAt is the byte offset of the first control character (C0, DEL or C1) in
// s, or -1.
func controlCharAt(s string) int {
	for i, r := range s {
		if unicode.IsControl(r) {
			return i
		}
	}
	return -1
}

// identifier checks a name that is set or may be empty: at most MaxIdentifierLength
// bytes and no control characters.
func (v *violations) identifier(path, s string) {
	if len(s) > MaxIdentifierLength {
		v.addf(path, "must be at most %d bytes", MaxIdentifierLength)
		return
	}
	if i := controlCharAt(s); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		v.addf(path, "must not contain control characters (%U at byte %d)", r, i)
	}
}

// requiredIdentifier checks a name that must be set.
func (v *violations) requiredIdentifier(path, s string) {
	if s == "" {
		v.add(path, ruleRequired)
		return
	}
	v.identifier(path, s)
}

// identifiers checks every name of a list and that there are at most limit of them.
func (v *violations) identifiers(path string, names []string, limit int) {
	v.atMost(path, len(names), limit)
	for i, name := range names {
		v.requiredIdentifier(item(path, i), name)
	}
}

// atMost checks that a list or map has at most limit entries.
func (v *violations) atMost(path string, n, limit int) {
	if n > limit {
		v.addf(path, "must have at most %d entries", limit)
	}
}

// maxLength checks that s has at most limit bytes.
func (v *violations) maxLength(path, s string, limit int) {
	if len(s) > limit {
		v.addf(path, "must be at most %d bytes", limit)
	}
}

// durationMs checks a timeout or interval in milliseconds against MaxDurationMs.
func (v *violations) durationMs(path string, ms uint64) {
	if ms > MaxDurationMs {
		v.addf(path, "must be at most %d (30 days)", MaxDurationMs)
	}
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

// guid checks a process or task guid: guidPattern and MaxIdentifierLength.
func (v *violations) guid(path, s string) {
	switch {
	case len(s) > MaxIdentifierLength:
		v.addf(path, "must be at most %d bytes", MaxIdentifierLength)
	case !guidPattern.MatchString(s):
		v.add(path, "must match "+guidPattern.String())
	}
}

// annotation checks the annotation size limit.
func (v *violations) annotation(path, s string) {
	v.maxLength(path, s, MaxAnnotationLength)
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
