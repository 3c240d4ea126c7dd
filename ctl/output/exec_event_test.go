package output_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestExecStartedSummary(t *testing.T) {
	e := models.ExecStartedEvent(&modelsv1.ActualLRPKey{ProcessGuid: "p", Index: 2},
		&modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"}, "drover-client", []string{"sh", "-c", "ps"}, true)
	require.Equal(t, `p/2 cell=cell-1 user="drover-client" args="sh -c ps" tty`, output.EventSummary(e))
}
