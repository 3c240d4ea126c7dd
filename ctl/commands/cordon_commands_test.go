package commands_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestCellCordonUncordon(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.cells = []*modelsv1.CellPresence{{CellId: "cell-1", Zone: "z1"}, {CellId: "cell-2", Zone: "z2"}}
	})

	res := run(t, ft.env, "cell", "cordon", "cell-1", "--reason", "disk replacement")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cell cell-1 is cordoned\n", res.stdout)
	require.True(t, proto.Equal(&bbsv1.CordonCellRequest{CellId: "cell-1", Reason: "disk replacement"}, ft.bbs.lastRequest(t)))

	res = run(t, ft.env, "cells")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	rows := rowFields(res.stdout)
	require.Equal(t, "CORDONED", rows[0][8])
	require.Equal(t, []string{"cell-1", "yes"}, []string{rows[1][0], rows[1][8]})
	require.Equal(t, []string{"cell-2", "no"}, []string{rows[2][0], rows[2][8]})
	require.Equal(t, "CORDON_REASON", rows[0][10])
	require.Equal(t, []string{"disk", "replacement"}, rows[1][10:], "the cordon reason is in the table")
	require.Equal(t, []string{"-"}, rows[2][10:])

	res = run(t, ft.env, "cells", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines(res.stdout)[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines(res.stdout)[1]), &second))
	require.Equal(t, "cell-1", first["cell_id"], "the LRP API's cell view is kept")
	require.Equal(t, true, first["cordoned"])
	require.Equal(t, "disk replacement", first["cordon_reason"])
	require.Equal(t, false, second["cordoned"])
	require.NotContains(t, second, "cordon_reason")

	res = run(t, ft.env, "cell", "uncordon", "cell-1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cell cell-1 is uncordoned\n", res.stdout)
	require.True(t, proto.Equal(&bbsv1.UncordonCellRequest{CellId: "cell-1"}, ft.bbs.lastRequest(t)))

	res = run(t, ft.env, "cell", "uncordon", "cell-1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cell cell-1 was not cordoned\n", res.stdout)

	res = run(t, ft.env, "cell", "uncordon", "cell-2", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"cell_id":"cell-2","was_cordoned":false}`, res.stdout)

	res = run(t, ft.env, "--json", "cell", "cordon", "cell-2")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"cell_id":"cell-2","cordoned":true}`, res.stdout)
	require.True(t, proto.Equal(&bbsv1.CordonCellRequest{CellId: "cell-2"}, ft.bbs.lastRequest(t)), "the reason is optional")
}
