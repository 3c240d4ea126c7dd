package push

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// AppsDomain is the BBS domain of the apps' desired LRPs.
const AppsDomain = "apps"

// Limits on a push's buildpacks and environment.
const (
	// MaxBuildpacks is how many -b a push may give.
	MaxBuildpacks = 16
	// MaxEnv is how many -e a push may give.
	MaxEnv = 100
)

// appNamespace is the UUIDv5 namespace of app guids (a fixed random UUID).
var appNamespace = uuid.MustParse("5b2e9c71-0d4a-4f3b-8e16-a742c9036df1")

// AppGUID is the app's guid: a UUIDv5 of its name in drover's namespace, so the same
// name always names the same app without a database.
func AppGUID(name string) string {
	return uuid.NewSHA1(appNamespace, []byte(name)).String()
}

// EnvVar is one environment variable an app is pushed with (-e NAME=VALUE).
type EnvVar struct {
	Name  string
	Value string
}

// Version is the first 8 hex digits of a SHA-256 over what CC's process version
// covers here: the package, the stack, memory and disk, the buildpacks (in order)
// and the environment (by name). A change of any of them makes a new LRP; a change
// of instances only scales the existing one. Without buildpacks and env the digest
// is the one earlier drovers computed, so that their apps keep their versions.
func Version(packageSHA256, stack string, memoryMB, diskMB int32, buildpacks []string, env []EnvVar) string {
	h := sha256.New()
	writeStrings(h, packageSHA256, stack)
	var n [8]byte
	binary.BigEndian.PutUint32(n[0:4], uint32(memoryMB))
	binary.BigEndian.PutUint32(n[4:8], uint32(diskMB))
	h.Write(n[:])
	if len(buildpacks) > 0 {
		h.Write([]byte{1, 'b'})
		writeCount(h, len(buildpacks))
		writeStrings(h, buildpacks...)
	}
	if len(env) > 0 {
		sorted := slices.SortedStableFunc(slices.Values(env), func(a, b EnvVar) int { return cmp.Compare(a.Name, b.Name) })
		h.Write([]byte{1, 'e'})
		writeCount(h, len(sorted))
		for _, e := range sorted {
			writeStrings(h, e.Name, e.Value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// writeStrings writes each string and a NUL after it.
func writeStrings(h hash.Hash, ss ...string) {
	for _, s := range ss {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
}

// writeCount writes n as 4 big-endian bytes.
func writeCount(h hash.Hash, n int) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	h.Write(b[:])
}

// ProcessGUID is the LRP's process guid: "<app guid>-<version>" (CC's Diego::ProcessGuid).
func ProcessGUID(appGUID, version string) string { return appGUID + "-" + version }

// App is one push's app: its name and settings and the package uploaded for it.
type App struct {
	Name      string
	Stack     string
	Instances int32
	MemoryMB  int32
	DiskMB    int32
	// Domain is the routing domain: the app is routed at Name.Domain.
	Domain string
	// Buildpacks are the -b names in order: empty detects over the stack's list;
	// otherwise all but the last supply and the last is the final buildpack.
	Buildpacks []string
	// Env is the app's environment (-e), given to the buildpacks and the app.
	Env []EnvVar
	// PackageKey and PackageSHA256 name the uploaded package blob.
	PackageKey    string
	PackageSHA256 string
}

// GUID is the app guid.
func (a App) GUID() string { return AppGUID(a.Name) }

// Version is the app's version (see Version).
func (a App) Version() string {
	return Version(a.PackageSHA256, a.Stack, a.MemoryMB, a.DiskMB, a.Buildpacks, a.Env)
}

// ProcessGUID is the process guid of this version's LRP.
func (a App) ProcessGUID() string { return ProcessGUID(a.GUID(), a.Version()) }

// Hostname is where the app is routed.
func (a App) Hostname() string { return a.Name + "." + a.Domain }

// DropletKey is the blob key of this version's droplet.
func (a App) DropletKey() string { return "droplets/" + a.GUID() + "/" + a.Version() + ".tgz" }

var (
	namePattern      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	stackPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	domainPattern    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	buildpackPattern = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)
	envNamePattern   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate checks the settings a person chose; the error names every bad flag. An
// empty Stack is the stager's default stack.
func (a App) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !namePattern.MatchString(a.Name) {
		add("--name %q must be a DNS label: lower-case letters, digits and '-', at most 63, not starting or ending with '-'", a.Name)
	}
	if a.Stack != "" && !stackPattern.MatchString(a.Stack) {
		add("--stack %q must be lower-case letters, digits, '.', '_' and '-'", a.Stack)
	}
	if a.Instances < 0 {
		add("--instances %d must not be negative", a.Instances)
	}
	if a.MemoryMB <= 0 {
		add("--memory must be positive")
	}
	if a.DiskMB <= 0 {
		add("--disk must be positive")
	}
	if len(a.Hostname()) > 253 || !domainPattern.MatchString(a.Domain) {
		add("--domain %q is not a valid DNS domain", a.Domain)
	}
	problems = append(problems, buildpackProblems(a.Buildpacks)...)
	problems = append(problems, envProblems(a.Env)...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// CheckBuildpackName refuses a buildpack name that is not 1 to 64 of [a-z0-9._-].
func CheckBuildpackName(name string) error {
	if !buildpackPattern.MatchString(name) {
		return fmt.Errorf("buildpack name %q must be 1 to 64 lower-case letters, digits, '.', '_' and '-'", name)
	}
	return nil
}

// buildpackProblems checks the -b names.
func buildpackProblems(names []string) []string {
	var problems []string
	if len(names) > MaxBuildpacks {
		problems = append(problems, fmt.Sprintf("-b/--buildpack is given %d times: at most %d", len(names), MaxBuildpacks))
	}
	for _, n := range names {
		if !buildpackPattern.MatchString(n) {
			problems = append(problems, fmt.Sprintf("-b/--buildpack %q must be 1 to 64 lower-case letters, digits, '.', '_' and '-'", n))
		}
	}
	return problems
}

// envProblems checks the -e variables: names as a shell takes them, none twice, and
// none that Cloud Foundry keeps for itself (PORT, VCAP_*).
func envProblems(env []EnvVar) []string {
	var problems []string
	if len(env) > MaxEnv {
		problems = append(problems, fmt.Sprintf("-e/--env is given %d times: at most %d", len(env), MaxEnv))
	}
	seen := map[string]bool{}
	for _, e := range env {
		switch {
		case !envNamePattern.MatchString(e.Name):
			problems = append(problems, fmt.Sprintf("-e/--env name %q must be a letter or '_', then letters, digits and '_'", e.Name))
		case e.Name == "PORT" || strings.HasPrefix(e.Name, "VCAP_"):
			problems = append(problems, fmt.Sprintf("-e/--env %s is set by drover: PORT and VCAP_* cannot be given", e.Name))
		case seen[e.Name]:
			problems = append(problems, fmt.Sprintf("-e/--env %s is given twice", e.Name))
		}
		seen[e.Name] = true
	}
	return problems
}

// ParseEnv reads -e values "NAME=VALUE" (the value may be empty or hold '=').
func ParseEnv(values []string) ([]EnvVar, error) {
	env := make([]EnvVar, 0, len(values))
	var problems []string
	for _, v := range values {
		name, value, ok := strings.Cut(v, "=")
		if !ok {
			problems = append(problems, fmt.Sprintf("-e/--env %q must be NAME=VALUE", v))
			continue
		}
		env = append(env, EnvVar{Name: name, Value: value})
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return env, nil
}

// ParseMegabytes reads a size in megabytes: "128" and "128M" (or "128MB") are 128,
// "1G" (or "1GB") is 1024. Units are case-insensitive; the size must be positive.
func ParseMegabytes(s string) (int32, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	factor := int64(1)
	for _, unit := range []struct {
		suffix string
		factor int64
	}{{"GB", 1024}, {"G", 1024}, {"MB", 1}, {"M", 1}} {
		if strings.HasSuffix(t, unit.suffix) {
			t, factor = strings.TrimSuffix(t, unit.suffix), unit.factor
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 32)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive size in megabytes (128, 64M, 1G)", s)
	}
	if n*factor > 1<<31-1 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int32(n * factor), nil
}
