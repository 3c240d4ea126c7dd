package testenv

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records how Missing stopped it.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()          {}
func (r *recorder) Skip(args ...any) { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestMissingSkipsUnlessEverythingIsRequired(t *testing.T) {
	for _, tc := range []struct {
		env      string
		wantFail bool
	}{
		{env: "", wantFail: false},
		{env: "0", wantFail: false},
		{env: "false", wantFail: false},
		{env: "not a boolean", wantFail: false},
		{env: "1", wantFail: true},
		{env: "true", wantFail: true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(RequireAllEnv, tc.env)
			r := &recorder{}
			Missing(r, "Postgres", "start it with scripts/postgres.sh start")
			if tc.wantFail {
				require.Empty(t, r.skipped)
				require.Equal(t, "needs Postgres: start it with scripts/postgres.sh start (DROVER_REQUIRE_ALL is set: nothing may be skipped)", r.failed)
			} else {
				require.Equal(t, "needs Postgres: start it with scripts/postgres.sh start", r.skipped)
				require.Empty(t, r.failed)
			}
		})
	}
}

func TestRequireRoot(t *testing.T) {
	t.Setenv(RequireAllEnv, "")
	r := &recorder{}
	RequireRoot(r, "network namespaces")
	if os.Geteuid() == 0 {
		require.Empty(t, r.skipped, "root needs nothing")
	} else {
		require.Equal(t, "needs root: network namespaces: run the tests as root (e.g. with sudo)", r.skipped)
	}
}
