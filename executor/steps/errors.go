package steps

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCancelled is returned by a step stopped through its context.
var ErrCancelled = errors.New("cancelled")

// ErrDetached is returned by a run step left running because the executor detached.
var ErrDetached = errors.New("detached from process")

// ErrCodependentExited is a clean exit inside a codependent step.
var ErrCodependentExited = errors.New("codependent step exited")

// EmittableError carries a message meant for the application's log (emit_progress
// writes only these). Error returns the message.
type EmittableError struct {
	Msg   string
	Cause error
}

// Error is the user-facing message.
func (e *EmittableError) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *EmittableError) Unwrap() error { return e.Cause }

// emittable returns an EmittableError with a formatted message.
func emittable(cause error, format string, args ...any) *EmittableError {
	return &EmittableError{Msg: fmt.Sprintf(format, args...), Cause: cause}
}

// EmittableMessage returns the user-facing message of err when it is (or wraps) an
// EmittableError or a MultiError holding some.
func EmittableMessage(err error) (string, bool) {
	var m *MultiError
	if errors.As(err, &m) {
		var msgs []string
		for _, e := range m.Errs {
			if msg, ok := EmittableMessage(e); ok {
				msgs = append(msgs, msg)
			}
		}
		return strings.Join(msgs, "; "), len(msgs) > 0
	}
	var e *EmittableError
	if errors.As(err, &e) {
		return e.Msg, true
	}
	return "", false
}

// MultiError aggregates the errors of parallel children.
type MultiError struct {
	Errs []error
}

// Error joins the messages with "; ".
func (m *MultiError) Error() string {
	msgs := make([]string, len(m.Errs))
	for i, e := range m.Errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the aggregated errors.
func (m *MultiError) Unwrap() []error { return m.Errs }

// aggregate returns nil, the single error, or a MultiError.
func aggregate(errs []error) error {
	var kept []error
	for _, e := range errs {
		if e != nil {
			kept = append(kept, e)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	default:
		return &MultiError{Errs: kept}
	}
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
