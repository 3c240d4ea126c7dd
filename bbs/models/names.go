package models

import (
	"strings"
	"unicode/utf8"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TruncateReason makes s safe to store as a reason: invalid UTF-8 and NUL characters
// are replaced (proto strings must be UTF-8 and Postgres text cannot hold NUL) and the
// result is cut to at most MaxReasonLength bytes without splitting a character.
func TruncateReason(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= MaxReasonLength {
		return s
	}
	cut := MaxReasonLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// actualLRPStateNames are Diego's state strings.
var actualLRPStateNames = map[modelsv1.ActualLRPState]string{
	modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED: "UNCLAIMED",
	modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED:   "CLAIMED",
	modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING:   "RUNNING",
	modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED:   "CRASHED",
}

// presenceNames are Diego's presence strings.
var presenceNames = map[modelsv1.ActualLRPPresence]string{
	modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY:   "ORDINARY",
	modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING: "EVACUATING",
	modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT:    "SUSPECT",
}

// taskStateNames are Diego's task state strings.
var taskStateNames = map[modelsv1.TaskState]string{
	modelsv1.TaskState_TASK_STATE_PENDING:   "PENDING",
	modelsv1.TaskState_TASK_STATE_RUNNING:   "RUNNING",
	modelsv1.TaskState_TASK_STATE_COMPLETED: "COMPLETED",
	modelsv1.TaskState_TASK_STATE_RESOLVING: "RESOLVING",
}

// unspecifiedName names the zero value or an unknown value of any of the enums.
const unspecifiedName = "UNSPECIFIED"

// StateName is Diego's name of an ActualLRP state ("UNCLAIMED", "CLAIMED",
// "RUNNING", "CRASHED"), or "UNSPECIFIED" for the zero or an unknown value.
func StateName(s modelsv1.ActualLRPState) string {
	return nameOf(actualLRPStateNames, s)
}

// PresenceName is Diego's name of a presence ("ORDINARY", "EVACUATING",
// "SUSPECT"), or "UNSPECIFIED" for the zero or an unknown value.
func PresenceName(p modelsv1.ActualLRPPresence) string {
	return nameOf(presenceNames, p)
}

// TaskStateName is Diego's name of a task state ("PENDING", "RUNNING",
// "COMPLETED", "RESOLVING"), or "UNSPECIFIED" for the zero or an unknown value.
func TaskStateName(s modelsv1.TaskState) string {
	return nameOf(taskStateNames, s)
}

// ParseActualLRPState parses a state name, either Diego's ("RUNNING") or the proto
// enum's ("ACTUAL_LRP_STATE_RUNNING"), ignoring case. UNSPECIFIED does not parse.
func ParseActualLRPState(s string) (modelsv1.ActualLRPState, bool) {
	return parseName(actualLRPStateNames, "ACTUAL_LRP_STATE_", s)
}

// ParseTaskState parses a task state name, either Diego's ("PENDING") or the proto
// enum's ("TASK_STATE_PENDING"), ignoring case. UNSPECIFIED does not parse.
func ParseTaskState(s string) (modelsv1.TaskState, bool) {
	return parseName(taskStateNames, "TASK_STATE_", s)
}

// ParsePresence parses a presence name, either Diego's ("SUSPECT") or the proto
// enum's ("ACTUAL_LRP_PRESENCE_SUSPECT"), ignoring case. UNSPECIFIED does not parse.
func ParsePresence(s string) (modelsv1.ActualLRPPresence, bool) {
	return parseName(presenceNames, "ACTUAL_LRP_PRESENCE_", s)
}

func nameOf[E comparable](names map[E]string, e E) string {
	if n, ok := names[e]; ok {
		return n
	}
	return unspecifiedName
}

func parseName[E comparable](names map[E]string, enumPrefix, s string) (E, bool) {
	s = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), enumPrefix)
	for e, n := range names {
		if n == s {
			return e, true
		}
	}
	var zero E
	return zero, false
}
