package output

import (
	"strconv"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TaskProperties shows one task: where it runs, its state and its outcome.
func TaskProperties(t *modelsv1.Task, now time.Time) *Properties {
	p := &Properties{}
	def := t.GetTaskDefinition()
	p.Add("task_guid", t.GetTaskGuid())
	p.Add("domain", t.GetDomain())
	p.Add("state", models.TaskStateName(t.GetState()))
	p.Add("cell_id", orEmpty(t.GetCellId()))
	p.Add("rootfs", def.GetRootfs())
	p.Add("memory_mb", Int(def.GetMemoryMb()))
	p.Add("disk_mb", Int(def.GetDiskMb()))
	p.Add("log_guid", orEmpty(def.GetLogGuid()))
	p.Add("result_file", orEmpty(def.GetResultFile()))
	p.Add("annotation", orEmpty(def.GetAnnotation()))
	p.Add("failed", strconv.FormatBool(t.GetFailed()))
	p.Add("failure_reason", orEmpty(t.GetFailureReason()))
	p.Add("result", orEmpty(t.GetResult()))
	p.Add("rejections", Int(t.GetRejectionCount()))
	p.Add("created", TimestampWithAge(t.GetCreatedAt(), now))
	p.Add("updated", TimestampWithAge(t.GetUpdatedAt(), now))
	return p
}

// orEmpty is s, or Empty when s is.
func orEmpty(s string) string {
	if s == "" {
		return Empty
	}
	return s
}
