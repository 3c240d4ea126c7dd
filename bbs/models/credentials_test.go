package models_test

import (
	"testing"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	secretImageUser     = "image-user-7c1e"
	secretImagePassword = "image-password-9a4f"
)

func withImageCredentials(t *testing.T) (*modelsv1.DesiredLRP, *modelsv1.Task) {
	t.Helper()
	lrp := fullDesiredLRP(t)
	lrp.ImageUsername, lrp.ImagePassword = secretImageUser, secretImagePassword
	def := validTaskDefinition()
	def.ImageUsername, def.ImagePassword = secretImageUser, secretImagePassword
	return lrp, &modelsv1.Task{TaskGuid: "t", Domain: "d", TaskDefinition: def}
}

func requireNoImageCredentials(t *testing.T, m proto.Message) {
	t.Helper()
	data, err := protojson.Marshal(m)
	require.NoError(t, err)
	require.NotContains(t, string(data), secretImagePassword)
	require.NotContains(t, string(data), secretImageUser)
}

func TestEventsCarryNoImageCredentials(t *testing.T) {
	lrp, task := withImageCredentials(t)
	for _, e := range []*modelsv1.Event{
		models.DesiredLRPCreatedEvent(lrp),
		models.DesiredLRPChangedEvent(lrp, lrp),
		models.DesiredLRPRemovedEvent(lrp),
		models.TaskCreatedEvent(task),
		models.TaskChangedEvent(task, task),
		models.TaskRemovedEvent(task),
	} {
		requireNoImageCredentials(t, e)
	}
	// The records themselves are untouched, and everything else is in the events.
	require.Equal(t, secretImagePassword, lrp.GetImagePassword())
	require.Equal(t, secretImagePassword, task.GetTaskDefinition().GetImagePassword())
	created := models.DesiredLRPCreatedEvent(lrp).GetDesiredLrpCreated().GetDesiredLrp()
	lrp.ImageUsername, lrp.ImagePassword = "", ""
	require.True(t, proto.Equal(lrp, created))
}

func TestWithoutImageCredentials(t *testing.T) {
	lrp, task := withImageCredentials(t)
	requireNoImageCredentials(t, models.DesiredLRPWithoutImageCredentials(lrp))
	requireNoImageCredentials(t, models.TaskWithoutImageCredentials(task))
	for _, l := range models.DesiredLRPsWithoutImageCredentials([]*modelsv1.DesiredLRP{lrp, lrp}) {
		requireNoImageCredentials(t, l)
	}
	for _, tk := range models.TasksWithoutImageCredentials([]*modelsv1.Task{task}) {
		requireNoImageCredentials(t, tk)
	}
	require.Equal(t, secretImagePassword, lrp.GetImagePassword(), "the input is not modified")
	require.Equal(t, secretImagePassword, task.GetTaskDefinition().GetImagePassword(), "the input is not modified")
	require.Nil(t, models.DesiredLRPWithoutImageCredentials(nil))
	require.Nil(t, models.TaskWithoutImageCredentials(nil))
	require.NotNil(t, models.TaskWithoutImageCredentials(&modelsv1.Task{TaskGuid: "no-definition"}))
	requireNoImageCredentials(t, models.SchedulingInfo(lrp))
}
