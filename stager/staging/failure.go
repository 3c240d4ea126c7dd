package staging

import (
	"fmt"
	"strings"
)

// MaxLastLines is how many of the task's last log lines a failure carries.
const MaxLastLines = 20

// builderPrefix starts the lifecycle builder's own error line on stderr.
const builderPrefix = "builder: "

// noCompatibleCell is in the failure reason of a task no cell could take.
const noCompatibleCell = "found no compatible cell"

// Failure turns a failed staging task into what the user reads: the builder's own
// "builder: ..." line (the last one) when there is one, else "no cell serves stack"
// for a placement failure, else the task's failure_reason. It also returns the last
// MaxLastLines lines.
func Failure(failureReason string, lines []string, stack string) (reason string, last []string) {
	if len(lines) > MaxLastLines {
		last = append(last, lines[len(lines)-MaxLastLines:]...)
	} else {
		last = append(last, lines...)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), builderPrefix); ok && msg != "" {
			return msg, last
		}
	}
	if strings.Contains(failureReason, noCompatibleCell) {
		return fmt.Sprintf("no cell serves stack %q", stack), last
	}
	if strings.TrimSpace(failureReason) == "" {
		return "staging failed", last
	}
	return failureReason, last
}
