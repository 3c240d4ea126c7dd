package translate

import (
	"fmt"
	"slices"
	"strings"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// CheckRootFS refuses a rootfs URL that none of the providers runs. A provider without
// properties accepts any URL of its scheme (arbitrary, e.g. docker://ref); one with
// properties accepts only the names listed (fixed set, e.g. preloaded:busybox).
func CheckRootFS(rootfs string, providers []*modelsv1.RootFSProvider) error {
	scheme, rest, ok := strings.Cut(rootfs, ":")
	if !ok || scheme == "" || rest == "" {
		return fmt.Errorf("rootfs %q: must be scheme:name or scheme://ref", rootfs)
	}
	name := strings.TrimPrefix(rest, "//")
	for _, p := range providers {
		if p.GetName() != scheme {
			continue
		}
		if len(p.GetProperties()) == 0 || slices.Contains(p.GetProperties(), name) {
			return nil
		}
		return fmt.Errorf("rootfs %q: %s %q is not on this cell (have %v)", rootfs, scheme, name, p.GetProperties())
	}
	return fmt.Errorf("rootfs %q: scheme %q is not supported by this cell", rootfs, scheme)
}
