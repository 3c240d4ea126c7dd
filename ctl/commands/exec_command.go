package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// execStdinChunk is the most input one message carries (the rep's bound is 64 KiB).
const execStdinChunk = 32 << 10

// exitStatusError makes droverctl exit with a remote process's status.
type exitStatusError struct{ code int }

func (e *exitStatusError) Error() string {
	return fmt.Sprintf("the command exited with status %d", e.code)
}

func execCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "exec APP|GUID [--index N] [-i] [-t] -- CMD [ARG...]", GroupID: groupLRPs,
		Short: "Run a command inside a running instance of an LRP or app",
		Long: appArgHelp + "\n" +
			"The command runs in the instance's container (index 0 unless --index), as the\n" +
			"instance's user, with its env, through the rep of its cell. -i sends droverctl's\n" +
			"input to it; -t gives it a terminal (the local one, when input is a terminal, is\n" +
			"switched to raw mode and its size follows the window's). droverctl exits with the\n" +
			"command's status. The LRP must allow it ('droverctl enable-ssh'); only the\n" +
			"operator identity may exec, every exec is recorded as an exec_started event, and\n" +
			"the command is killed when droverctl goes away.",
		Example: examples("exec my-app -it -- sh", "exec my-app --index 1 -- ps", "exec my-app -- sh -c 'exit 3'; echo $?"),
	}
	var index uint64Value
	cmd.Flags().Var(&index, "index", "the instance with this `N` (default 0)")
	interactive := cmd.Flags().BoolP("interactive", "i", false, "send droverctl's input to the command")
	tty := cmd.Flags().BoolP("tty", "t", false, "give the command a terminal")
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		dash := cmd.ArgsLenAtDash()
		switch {
		case dash > 1 || dash == 0 || (dash < 0 && len(args) < 2):
			return usagef("%s takes APP|GUID -- CMD [ARG...]", commandName(cmd))
		case len(args) < 2:
			return usagef("%s needs a command after --", commandName(cmd))
		}
		return nil
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		if index.set && index.n > 1<<31-1 {
			return usagef("--index %d is too large", index.n)
		}
		return s.exec(ctx, args[0], int32(index.n), args[1:], *interactive, *tty)
	})
	return cmd
}

// exec runs argv in the instance index of app and streams it; it returns an
// exitStatusError for a non-zero status.
func (s *session) exec(ctx context.Context, app string, index int32, argv []string, interactive, tty bool) error {
	target, err := s.resolveApp(ctx, app)
	if err != nil {
		return err
	}
	guid := target.guids[0] // an app's newest version
	actual, cell, err := s.execInstance(ctx, guid, index)
	if err != nil {
		return err
	}
	rc, err := s.dialRep(cell)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := rc.client.Exec(ctx)
	if err != nil {
		return s.repError(cell, err)
	}
	send := lockedSender(stream)

	var stdin *os.File
	if f, ok := s.env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		stdin = f
	}
	start := &repv1.ExecStart{ProcessGuid: guid, Index: index, InstanceGuid: actual.GetInstanceGuid(), Args: argv, Tty: tty}
	if tty && stdin != nil {
		if w, h, err := term.GetSize(int(stdin.Fd())); err == nil {
			start.Size = &repv1.TerminalSize{Rows: uint32(h), Columns: uint32(w)}
		}
	}
	if err := send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_Start{Start: start}}); err != nil && !errors.Is(err, io.EOF) {
		return s.repError(cell, err)
	}
	if tty && stdin != nil && interactive {
		old, err := term.MakeRaw(int(stdin.Fd()))
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		defer func() { _ = term.Restore(int(stdin.Fd()), old) }()
		stopResize := forwardResizes(ctx, stdin, send)
		defer stopResize()
	}
	if interactive && s.env.Stdin != nil {
		go forwardStdin(s.env.Stdin, send)
	} else {
		_ = send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_CloseStdin{CloseStdin: true}})
	}
	return s.execOutput(stream, cell)
}

// execOutput copies the command's output until its exit status arrives.
func (s *session) execOutput(stream repv1.RepService_ExecClient, cell *modelsv1.CellPresence) error {
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return models.NewError(models.ErrTypeUnavailable, "rep of cell %s ended the exec without an exit status", cell.GetCellId())
		}
		if err != nil {
			return s.repError(cell, err)
		}
		switch p := resp.GetPayload().(type) {
		case *repv1.ExecResponse_Stdout:
			if _, err := s.stdout.Write(p.Stdout); err != nil {
				return err
			}
		case *repv1.ExecResponse_Stderr:
			if _, err := s.stderr.Write(p.Stderr); err != nil {
				return err
			}
		case *repv1.ExecResponse_ExitStatus:
			if p.ExitStatus != 0 {
				return &exitStatusError{code: int(p.ExitStatus)}
			}
			return nil
		}
	}
}

// execInstance finds the running instance index of guid and its cell.
func (s *session) execInstance(ctx context.Context, guid string, index int32) (*modelsv1.ActualLRP, *modelsv1.CellPresence, error) {
	actuals, err := listActualLRPs(ctx, s, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid, Index: &index})
	if err != nil {
		return nil, nil, err
	}
	var running *modelsv1.ActualLRP
	for _, a := range actuals {
		if a.GetState() != modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING {
			continue
		}
		if running == nil || a.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY {
			running = a
		}
	}
	if running == nil {
		if len(actuals) == 0 {
			return nil, nil, models.NewError(models.ErrTypeResourceNotFound, "no instance %s/%d", guid, index)
		}
		return nil, nil, models.NewError(models.ErrTypeInvalidStateTransition, "instance %s/%d is not running", guid, index)
	}
	cells, err := s.listCells(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range cells {
		if c.GetCellId() == running.GetCellId() {
			return running, c, nil
		}
	}
	return nil, nil, models.NewError(models.ErrTypeResourceNotFound, "cell %s of instance %s/%d is gone", running.GetCellId(), guid, index)
}

// lockedSender serialises the sends of the input and resize goroutines.
func lockedSender(stream repv1.RepService_ExecClient) func(*repv1.ExecRequest) error {
	var mu sync.Mutex
	return func(req *repv1.ExecRequest) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(req)
	}
}

// forwardStdin sends in as stdin messages, then close_stdin at its end.
func forwardStdin(in io.Reader, send func(*repv1.ExecRequest) error) {
	buf := make([]byte, execStdinChunk)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_Stdin{Stdin: append([]byte(nil), buf[:n]...)}}) != nil {
				return
			}
		}
		if err != nil {
			_ = send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_CloseStdin{CloseStdin: true}})
			return
		}
	}
}

// forwardResizes sends the terminal's size on every SIGWINCH until stopped.
func forwardResizes(ctx context.Context, tty *os.File, send func(*repv1.ExecRequest) error) (stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				if w, h, err := term.GetSize(int(tty.Fd())); err == nil {
					_ = send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_Resize{Resize: &repv1.TerminalSize{Rows: uint32(h), Columns: uint32(w)}}})
				}
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}

func enableSSHCommand(ctl *cli, enable bool) *cobra.Command {
	name, verb := "enable-ssh", "Allow"
	if !enable {
		name, verb = "disable-ssh", "Forbid"
	}
	cmd := &cobra.Command{
		Use: name + " APP|GUID", GroupID: groupLRPs, Args: exactArgs("APP|GUID"),
		Short:   verb + " 'droverctl exec' into an LRP's or app's instances",
		Long:    appArgHelp + "\nEvery version of an app is changed. New LRPs do not allow exec unless pushed with --allow-ssh.",
		Example: examples(name + " my-app"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		target, err := s.resolveApp(ctx, args[0])
		if err != nil {
			return err
		}
		state := "allowed"
		if !enable {
			state = "forbidden"
		}
		for _, guid := range target.guids {
			if err := updateDesiredLRP(ctx, s, guid, &modelsv1.DesiredLRPUpdate{AllowSsh: &enable},
				fmt.Sprintf("exec into %s is %s", guid, state)); err != nil {
				return err
			}
		}
		return nil
	})
	return cmd
}
