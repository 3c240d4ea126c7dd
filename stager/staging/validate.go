package staging

import (
	"errors"
	"fmt"
	"regexp"

	"drover.dev/fileserver/blobstore"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// Bounds of a StageRequest.
const (
	MaxAppGUIDLen    = 128
	MaxAppNameLen    = 255
	MaxPackageKeyLen = 1024
	MaxStackLen      = 64
	MaxBuildpacks    = 16
	MaxEnv           = 100
	MaxEnvValueBytes = 32 << 10
	// MaxMB bounds memory_mb and disk_mb.
	MaxMB = 65536
)

var (
	appGUIDPattern       = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	buildpackNamePattern = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)
	envNamePattern       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256Pattern        = regexp.MustCompile(`^[0-9a-f]{64}$`)
	stackPattern         = regexp.MustCompile(`^[a-z0-9._-]*$`)
)

// FieldError is one bad field of a request and the rule it breaks.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// fields collects FieldErrors.
type fields []error

func (f *fields) add(field, format string, args ...any) {
	*f = append(*f, &FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
}

func (f fields) err() error { return errors.Join(f...) }

// Validate checks every field of req and returns one error naming each bad field and
// its rule (nil when req is fine).
func Validate(req *stagerv1.StageRequest) error {
	var f fields
	if req == nil {
		f.add("request", "is required")
		return f.err()
	}
	g := req.GetAppGuid()
	switch {
	case g == "":
		f.add("app_guid", "is required")
	case len(g) > MaxAppGUIDLen:
		f.add("app_guid", "must be at most %d bytes, got %d", MaxAppGUIDLen, len(g))
	case !appGUIDPattern.MatchString(g):
		f.add("app_guid", "must match %s", appGUIDPattern)
	case g == "." || g == "..":
		f.add("app_guid", "must not be %q", g)
	}
	if len(req.GetAppName()) > MaxAppNameLen {
		f.add("app_name", "must be at most %d bytes, got %d", MaxAppNameLen, len(req.GetAppName()))
	}
	validBlobKey(&f, "package_key", req.GetPackageKey(), true)
	if !sha256Pattern.MatchString(req.GetPackageSha256()) {
		f.add("package_sha256", "must be 64 lowercase hex digits, got %q", truncate(req.GetPackageSha256(), 80))
	}
	if s := req.GetStack(); len(s) > MaxStackLen || !stackPattern.MatchString(s) {
		f.add("stack", "must be at most %d characters of [a-z0-9._-], got %q", MaxStackLen, truncate(s, 80))
	}
	if n := len(req.GetBuildpacks()); n > MaxBuildpacks {
		f.add("buildpacks", "at most %d buildpacks, got %d", MaxBuildpacks, n)
	}
	seen := map[string]bool{}
	for i, b := range req.GetBuildpacks() {
		field := fmt.Sprintf("buildpacks[%d]", i)
		switch {
		case !buildpackNamePattern.MatchString(b):
			f.add(field, "must match %s, got %q", buildpackNamePattern, truncate(b, 80))
		case seen[b]:
			f.add(field, "%q is named twice", b)
		}
		seen[b] = true
	}
	if n := len(req.GetEnv()); n > MaxEnv {
		f.add("env", "at most %d variables, got %d", MaxEnv, n)
	}
	for i, e := range req.GetEnv() {
		if !envNamePattern.MatchString(e.GetName()) {
			f.add(fmt.Sprintf("env[%d].name", i), "must match %s, got %q", envNamePattern, truncate(e.GetName(), 80))
		}
		if len(e.GetValue()) > MaxEnvValueBytes {
			f.add(fmt.Sprintf("env[%d].value", i), "must be at most %d bytes, got %d", MaxEnvValueBytes, len(e.GetValue()))
		}
	}
	if m := req.GetMemoryMb(); m < 0 || m > MaxMB {
		f.add("memory_mb", "must be between 0 and %d, got %d", MaxMB, m)
	}
	if d := req.GetDiskMb(); d < 0 || d > MaxMB {
		f.add("disk_mb", "must be between 0 and %d, got %d", MaxMB, d)
	}
	validBlobKey(&f, "droplet_key", req.GetDropletKey(), false)
	return f.err()
}

// validBlobKey checks a fileserver blob key (required or optional).
func validBlobKey(f *fields, field, key string, required bool) {
	switch {
	case key == "" && !required:
	case key == "":
		f.add(field, "is required")
	case len(key) > MaxPackageKeyLen:
		f.add(field, "must be at most %d bytes, got %d", MaxPackageKeyLen, len(key))
	default:
		if err := blobstore.ValidateKey(key); err != nil {
			f.add(field, "%v", err)
		}
	}
}

// ValidBuildpackName reports whether name is a valid buildpack name.
func ValidBuildpackName(name string) bool { return buildpackNamePattern.MatchString(name) }

// BuildpackNameRule describes a valid buildpack name.
func BuildpackNameRule() string { return "must match " + buildpackNamePattern.String() }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
