package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	"drover.dev/ctl/target"
	repclient "drover.dev/rep/client"
)

// session is one command's connections to the BBS and to reps, and its output streams.
type session struct {
	opts   *globalOptions
	env    Env
	stdout io.Writer
	stderr io.Writer
	target target.Target
	client *client.Client
	reps   *repclient.Pool // set with client
	// conns are the connections to other components (dialService).
	conns []io.Closer
}

func newSession(opts *globalOptions, env Env, stdout, stderr io.Writer) *session {
	return &session{opts: opts, env: env, stdout: stdout, stderr: stderr}
}

// bbs connects on first use: it resolves the target and loads the certificates.
func (s *session) bbs() (*client.Client, error) {
	if s.client != nil {
		return s.client, nil
	}
	t, err := target.Resolve(s.opts.target, s.getenv, s.env.WorkDir)
	if err != nil {
		return nil, models.NewError(ErrTypeInvalidTarget, "%v", err)
	}
	tlsConfig, err := t.TLS.Client()
	if err != nil {
		return nil, models.NewError(ErrTypeInvalidTarget, "%s: %v", t, err)
	}
	c, err := client.New(t.Address, tlsConfig)
	if err != nil {
		return nil, models.NewError(ErrTypeInvalidTarget, "%v", err)
	}
	s.target, s.client, s.reps = t, c, repclient.NewPool(tlsConfig, repclient.Options{})
	return c, nil
}

func (s *session) getenv(key string) string { return s.env.Vars[key] }

// close closes the connections, if any were made.
func (s *session) close() {
	for _, c := range s.conns {
		_ = c.Close() // nothing to do about a failed close on exit
	}
	if s.client != nil {
		_ = s.client.Close() // nothing to do about a failed close on exit
		_ = s.reps.Close()
	}
}

// begin connects and bounds one BBS call by --timeout. Call cancel when the call is done.
func (s *session) begin(ctx context.Context) (c *client.Client, callCtx context.Context, cancel context.CancelFunc, err error) {
	if c, err = s.bbs(); err != nil {
		return nil, nil, func() {}, err
	}
	callCtx, cancel = context.WithTimeout(ctx, s.opts.timeout)
	return c, callCtx, cancel, nil
}

// now is the session's clock.
func (s *session) now() time.Time {
	if s.env.Now != nil {
		return s.env.Now()
	}
	return time.Now()
}

// json reports whether --json was given.
func (s *session) json() bool { return s.opts.json }

// renderer is a table or property list.
type renderer interface{ Render(w io.Writer) error }

// render writes r to stdout.
func (s *session) render(r renderer) error { return r.Render(s.stdout) }

// jsonLine writes v as one JSON line to stdout.
func (s *session) jsonLine(v any) error { return output.WriteJSONLine(s.stdout, v) }

// confirm tells a person that a change was made; --json stays silent.
func (s *session) confirm(format string, args ...any) error {
	if s.json() {
		return nil
	}
	return s.println(format, args...)
}

// report prints a change's outcome: text for people, or view as a JSON line.
func (s *session) report(view any, format string, args ...any) error {
	if s.json() {
		return s.jsonLine(view)
	}
	return s.println(format, args...)
}

// println writes one formatted line to stdout, its control characters escaped.
func (s *session) println(format string, args ...any) error {
	_, err := fmt.Fprintln(s.stdout, output.Printable(fmt.Sprintf(format, args...)))
	return err
}

// describeError turns any error into a typed one, naming the BBS and the time limit
// when it could not be reached. Errors droverctl typed itself are kept as they are.
func (s *session) describeError(err error) *models.Error {
	var typed *models.Error
	if errors.As(err, &typed) {
		return typed
	}
	e := models.FromError(err)
	if e.Type != models.ErrTypeUnavailable || s.client == nil {
		return e
	}
	msg := fmt.Sprintf("bbs %s: %s", s.target.Address, e.Message)
	if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("bbs %s did not answer within %s (--timeout)", s.target.Address, s.opts.timeout)
	}
	return &models.Error{Type: e.Type, Message: msg}
}

// printList renders table, or with --json one view of each item per line.
func printList[T any](s *session, table renderer, items []T, view func(T) (any, error)) error {
	if !s.json() {
		return s.render(table)
	}
	for _, item := range items {
		v, err := view(item)
		if err != nil {
			return err
		}
		if err := s.jsonLine(v); err != nil {
			return err
		}
	}
	return nil
}

// infallible adapts a view function that cannot fail for printList.
func infallible[T, V any](view func(T) V) func(T) (any, error) {
	return func(item T) (any, error) { return view(item), nil }
}

// fallible adapts a view function that can fail for printList.
func fallible[T, V any](view func(T) (V, error)) func(T) (any, error) {
	return func(item T) (any, error) { return view(item) }
}
