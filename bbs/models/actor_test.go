package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestActorRules(t *testing.T) {
	trusted, cell1, empty := models.Actor{}, models.CellActor("cell-1"), models.CellActor("")
	lrp := func(state modelsv1.ActualLRPState, cell string) *modelsv1.ActualLRP {
		return &modelsv1.ActualLRP{ProcessGuid: "p", Index: 1, State: state, CellId: cell}
	}
	task := func(state modelsv1.TaskState, cell string) *modelsv1.Task {
		return &modelsv1.Task{TaskGuid: "t", State: state, CellId: cell}
	}
	const (
		unclaimed = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED
		claimed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
		running   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
		pending   = modelsv1.TaskState_TASK_STATE_PENDING
		taskRun   = modelsv1.TaskState_TASK_STATE_RUNNING
	)
	for _, tc := range []struct {
		name string
		err  error
		want string // "" when allowed
	}{
		{"trusted: any instance key", trusted.MayUseInstanceKey(&modelsv1.ActualLRPInstanceKey{CellId: "cell-2"}), ""},
		{"a cell uses its own key", cell1.MayUseInstanceKey(&modelsv1.ActualLRPInstanceKey{CellId: "cell-1"}), ""},
		{"a cell uses another's key", cell1.MayUseInstanceKey(&modelsv1.ActualLRPInstanceKey{CellId: "cell-2"}),
			`cell "cell-1" may not act with the instance key of cell "cell-2"`},
		{"a cell without a key", cell1.MayUseInstanceKey(nil), `cell "cell-1" may not act with the instance key of cell ""`},
		{"an empty cell never matches", empty.MayUseInstanceKey(&modelsv1.ActualLRPInstanceKey{}), `cell "" may not`},
		{"a cell acts for itself", cell1.MayActForCell("cell-1"), ""},
		{"a cell acts for another", cell1.MayActForCell("cell-2"), `cell "cell-1" may not act for cell "cell-2"`},
		{"trusted acts for any cell", trusted.MayActForCell("cell-2"), ""},

		{"trusted changes any row", trusted.MayChangeActualLRP(lrp(claimed, "cell-2"), false), ""},
		{"trusted creates rows", trusted.MayChangeActualLRP(nil, true), ""},
		{"a cell takes an UNCLAIMED row", cell1.MayChangeActualLRP(lrp(unclaimed, ""), true), ""},
		{"a cell changes its own row", cell1.MayChangeActualLRP(lrp(running, "cell-1"), false), ""},
		{"a cell may not change an UNCLAIMED row without taking it", cell1.MayChangeActualLRP(lrp(unclaimed, ""), false),
			`cell "cell-1" may not change actual lrp p/1: it is UNCLAIMED on cell ""`},
		{"a cell may not take a row CLAIMED by another", cell1.MayChangeActualLRP(lrp(claimed, "cell-2"), true),
			`cell "cell-1" may not change actual lrp p/1: it is CLAIMED on cell "cell-2"`},
		{"a cell may not create a row", cell1.MayChangeActualLRP(nil, true), `cell "cell-1" may not create an actual lrp`},
		{"an empty cell may not take an UNCLAIMED row's empty cell as its own", empty.MayChangeActualLRP(lrp(unclaimed, ""), false),
			`cell "" may not change`},

		{"a cell takes a PENDING task", cell1.MayChangeTask(task(pending, ""), true), ""},
		{"a cell changes its RUNNING task", cell1.MayChangeTask(task(taskRun, "cell-1"), false), ""},
		{"a cell may not reject a PENDING task", cell1.MayChangeTask(task(pending, ""), false),
			`cell "cell-1" may not change task "t": it is PENDING on cell ""`},
		{"a cell may not change another's task", cell1.MayChangeTask(task(taskRun, "cell-2"), true),
			`cell "cell-1" may not change task "t": it is RUNNING on cell "cell-2"`},
		{"trusted changes any task", trusted.MayChangeTask(task(taskRun, "cell-2"), false), ""},
		{"a cell reads its task", cell1.MayReadTask(task(taskRun, "cell-1")), ""},
		{"a cell may not read another's task", cell1.MayReadTask(task(pending, "")), `cell "cell-1" may not read task "t"`},
		{"trusted reads any task", trusted.MayReadTask(task(pending, "")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				require.NoError(t, tc.err)
				return
			}
			require.ErrorContains(t, tc.err, tc.want)
			require.Equal(t, models.ErrTypeUnauthorized, models.FromError(tc.err).Type)
		})
	}
	require.True(t, cell1.IsCell())
	require.Equal(t, "cell-1", cell1.Cell())
	require.False(t, trusted.IsCell())
}
