package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
)

// The auctioneer talks to the BBS and to reps over gRPC only: its binary links neither
// the BBS's storage (pgx, goose, the store, the server) nor the cell's containerd.
func TestLinksNeitherTheBBSStorageNorContainerd(t *testing.T) {
	require.Empty(t, proctest.Forbidden(proctest.Deps(t, "."),
		"github.com/jackc/pgx", "github.com/pressly/goose", "drover.dev/bbs/store", "drover.dev/bbs/server",
		"github.com/containerd", "drover.dev/executor",
	))
}
