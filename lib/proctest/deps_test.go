package proctest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForbidden(t *testing.T) {
	deps := []string{
		"fmt",
		"github.com/jackc/pgx/v5",
		"github.com/jackc/pgx/v5/pgconn",
		"github.com/jackc/pgxpool", // another module: only whole path elements match
		"drover.dev/bbs/store",
		"drover.dev/bbs/store/storetest",
		"drover.dev/bbs/storage",
		"drover.dev/bbs/client",
	}
	require.Equal(t, []string{
		"github.com/jackc/pgx/v5",
		"github.com/jackc/pgx/v5/pgconn",
		"drover.dev/bbs/store",
		"drover.dev/bbs/store/storetest",
	}, Forbidden(deps, "github.com/jackc/pgx", "drover.dev/bbs/store/"))
	require.Empty(t, Forbidden(deps, "github.com/pressly/goose"))
	require.Empty(t, Forbidden(nil, "fmt"))
}

func TestDepsListsThePackageAndItsImports(t *testing.T) {
	deps := Deps(t, "os/exec")
	require.Contains(t, deps, "os/exec")
	require.Contains(t, deps, "syscall")
	require.NotContains(t, deps, "net/http")
	require.Contains(t, Deps(t, "."), "drover.dev/lib/proctest", `"." is the package under test`)
}
