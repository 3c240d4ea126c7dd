package jsonapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestExecStartedEventView(t *testing.T) {
	e := models.ExecStartedEvent(&modelsv1.ActualLRPKey{ProcessGuid: "p", Index: 2, Domain: "d"},
		&modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"}, "drover-client", []string{"sh", "-c", "ps"}, true)
	e.Sequence = 7
	v, err := jsonapi.EventView(e)
	require.NoError(t, err)
	require.Equal(t, "exec_started", v.Type)
	var got map[string]any
	require.NoError(t, json.Unmarshal(v.Data, &got))
	require.Equal(t, map[string]any{"process_guid": "p", "index": 2.0, "domain": "d", "instance_guid": "ig", "cell_id": "cell-1",
		"user": "drover-client", "args": []any{"sh", "-c", "ps"}, "tty": true}, got)
	require.Equal(t, []string{"cell-1"}, models.EventCellIDs(e))
}
