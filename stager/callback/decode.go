// Package callback is the stager's HTTPS listener of staging task completion callbacks:
// the BBS posts a completed task's outcome to /v1/stagings/TASK_GUID/completed with its
// client certificate; the listener hands it to the staging that waits for that task
// (Registry). Only one stager replica is supported: waiters live in memory.
package callback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxBodyBytes bounds a callback's body.
const MaxBodyBytes = 1 << 20

// Completion is a completed task's outcome as the BBS posts it (the BBS's
// TaskCallbackResponse).
type Completion struct {
	TaskGUID      string `json:"task_guid"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	Result        string `json:"result"`
	Annotation    string `json:"annotation,omitempty"`
	CreatedAt     int64  `json:"created_at"`
}

// DecodeCompletion decodes one callback body: a JSON object with a task_guid, nothing
// after it. Unknown fields are ignored (the BBS may add some).
func DecodeCompletion(body []byte) (Completion, error) {
	var c Completion
	if len(body) > MaxBodyBytes {
		return c, fmt.Errorf("body is %d bytes, more than %d", len(body), MaxBodyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&c); err != nil {
		return Completion{}, fmt.Errorf("body is not a JSON callback: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Completion{}, errors.New("body has data after the JSON object")
	}
	if c.TaskGUID == "" {
		return Completion{}, errors.New("task_guid is required")
	}
	return c, nil
}
