package push

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Domains of what push creates in the BBS.
const (
	// AppsDomain holds the apps' desired LRPs.
	AppsDomain = "apps"
	// StagingDomain holds the staging tasks.
	StagingDomain = "staging"
)

// appNamespace is the UUIDv5 namespace of app guids (a fixed random UUID).
var appNamespace = uuid.MustParse("5b2e9c71-0d4a-4f3b-8e16-a742c9036df1")

// AppGUID is the app's guid: a UUIDv5 of its name in drover's namespace, so the same
// name always names the same app without a database.
func AppGUID(name string) string {
	return uuid.NewSHA1(appNamespace, []byte(name)).String()
}

// Version is the first 8 hex digits of a SHA-256 over what CC's process version
// covers here: the package, the stack, memory and disk. A change of any of them makes
// a new LRP; a change of instances only scales the existing one.
func Version(packageSHA256, stack string, memoryMB, diskMB int32) string {
	h := sha256.New()
	for _, s := range []string{packageSHA256, stack} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var n [8]byte
	binary.BigEndian.PutUint32(n[0:4], uint32(memoryMB))
	binary.BigEndian.PutUint32(n[4:8], uint32(diskMB))
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil))[:8]
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
	// PackageKey and PackageSHA256 name the uploaded package blob.
	PackageKey    string
	PackageSHA256 string
}

// GUID is the app guid.
func (a App) GUID() string { return AppGUID(a.Name) }

// Version is the app's version (see Version).
func (a App) Version() string { return Version(a.PackageSHA256, a.Stack, a.MemoryMB, a.DiskMB) }

// ProcessGUID is the process guid of this version's LRP.
func (a App) ProcessGUID() string { return ProcessGUID(a.GUID(), a.Version()) }

// Hostname is where the app is routed.
func (a App) Hostname() string { return a.Name + "." + a.Domain }

// RootFS is the stack's rootfs.
func (a App) RootFS() string { return "preloaded:" + a.Stack }

// DropletKey is the blob key of this version's droplet.
func (a App) DropletKey() string { return "droplets/" + a.GUID() + "/" + a.Version() + ".tgz" }

var (
	namePattern   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	stackPattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	domainPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
)

// Validate checks the settings a person chose; errors name the flag.
func (a App) Validate() error {
	switch {
	case !namePattern.MatchString(a.Name):
		return fmt.Errorf("--name %q must be a DNS label: lower-case letters, digits and '-', at most 63, not starting or ending with '-'", a.Name)
	case !stackPattern.MatchString(a.Stack):
		return fmt.Errorf("--stack %q must be lower-case letters, digits, '.', '_' and '-'", a.Stack)
	case a.Instances < 0:
		return fmt.Errorf("--instances %d must not be negative", a.Instances)
	case a.MemoryMB <= 0:
		return fmt.Errorf("--memory must be positive")
	case a.DiskMB <= 0:
		return fmt.Errorf("--disk must be positive")
	case len(a.Hostname()) > 253 || !domainPattern.MatchString(a.Domain):
		return fmt.Errorf("--domain %q is not a valid DNS domain", a.Domain)
	}
	return nil
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
