// Package testenv lets a test that needs something of the machine (root, Postgres,
// containerd) stop with a message naming what is missing: a skip on a developer's
// machine, so that `go test ./...` passes anywhere, and a failure where
// DROVER_REQUIRE_ALL is set (make test and CI), so that nothing is skipped silently there.
package testenv

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// RequireAllEnv names the variable that turns every Missing into a failure when it is a
// true boolean ("1", "true"); scripts/test.sh sets it.
const RequireAllEnv = "DROVER_REQUIRE_ALL"

// RequireAll reports whether $DROVER_REQUIRE_ALL asks that nothing be skipped.
func RequireAll() bool {
	all, err := strconv.ParseBool(os.Getenv(RequireAllEnv))
	return err == nil && all
}

// Missing stops t because the machine lacks need ("root", "Postgres", "containerd"); how
// says what failed and how to provide it. It skips t, or fails it when RequireAll.
func Missing(t testing.TB, need, how string) {
	t.Helper()
	msg := fmt.Sprintf("needs %s: %s", need, how)
	if RequireAll() {
		t.Fatalf("%s (%s is set: nothing may be skipped)", msg, RequireAllEnv)
	} else {
		t.Skip(msg)
	}
}

// RequireRoot calls Missing unless the test runs as root; why names what needs it
// (e.g. "network namespaces, bridges and iptables").
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "root", why+": run the tests as root (e.g. with sudo)")
	}
}
