package models

import (
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/proto"
)

// Image registry credentials (image_username, image_password) are for the cell that pulls
// the image: the store keeps them in the encrypted run information, and only a cell's
// read of one LRP or task (GetDesiredLRP, GetTask) returns them. Events, lists and
// everyone else's reads carry the records without them, so that no subscriber, list
// client or log of either ever sees a registry password.

// DesiredLRPWithoutImageCredentials is a copy of lrp with image_username and
// image_password blank. nil gives nil.
func DesiredLRPWithoutImageCredentials(lrp *modelsv1.DesiredLRP) *modelsv1.DesiredLRP {
	if lrp == nil {
		return nil
	}
	c := proto.CloneOf(lrp)
	c.ImageUsername, c.ImagePassword = "", ""
	return c
}

// TaskWithoutImageCredentials is a copy of t whose definition has image_username and
// image_password blank. nil gives nil.
func TaskWithoutImageCredentials(t *modelsv1.Task) *modelsv1.Task {
	if t == nil {
		return nil
	}
	c := proto.CloneOf(t)
	if def := c.GetTaskDefinition(); def != nil {
		def.ImageUsername, def.ImagePassword = "", ""
	}
	return c
}

// DesiredLRPsWithoutImageCredentials applies DesiredLRPWithoutImageCredentials to each.
func DesiredLRPsWithoutImageCredentials(lrps []*modelsv1.DesiredLRP) []*modelsv1.DesiredLRP {
	out := make([]*modelsv1.DesiredLRP, len(lrps))
	for i, l := range lrps {
		out[i] = DesiredLRPWithoutImageCredentials(l)
	}
	return out
}

// TasksWithoutImageCredentials applies TaskWithoutImageCredentials to each.
func TasksWithoutImageCredentials(tasks []*modelsv1.Task) []*modelsv1.Task {
	out := make([]*modelsv1.Task, len(tasks))
	for i, t := range tasks {
		out[i] = TaskWithoutImageCredentials(t)
	}
	return out
}
