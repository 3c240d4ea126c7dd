package executor

import (
	"context"
	"io"
)

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Rows    uint16
	Columns uint16
}

// InteractiveSpec is a process an operator runs inside a running container (droverctl
// exec): unlike a ProcessSpec it may have a terminal and input, and it belongs to its
// caller, not to the container's lifecycle.
type InteractiveSpec struct {
	// Args is the command: Args[0] is the program (looked up in the PATH of the env).
	Args []string
	// Env is added to the container env (NAME=value; later entries win).
	Env []string
	// User runs the process ("" = root).
	User string
	// Dir is the working directory ("" = "/").
	Dir string
	// TTY gives the process a terminal of Size; its output then all goes to Stdout.
	TTY  bool
	Size TerminalSize
	// Stdin feeds the process's input; nil gives it none. Its EOF closes the input.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it.
	Stdout io.Writer
	Stderr io.Writer
}

// InteractiveProcess is a running InteractiveSpec.
type InteractiveProcess interface {
	// Resize changes the terminal's size (a TTY process only).
	Resize(ctx context.Context, size TerminalSize) error
	// Wait blocks until the process has exited and its output is delivered, or ctx ends.
	Wait(ctx context.Context) (ProcessExit, error)
	// Kill ends the process and every process it started that is still in its
	// session or below it, then releases it; Wait returns afterwards.
	Kill(ctx context.Context) error
}

// Interactive is what runs InteractiveSpecs: a Runtime, and the executor Client above it
// (which admits only running containers).
type Interactive interface {
	// ExecInteractive starts spec in the container guid.
	ExecInteractive(ctx context.Context, guid string, spec InteractiveSpec) (InteractiveProcess, error)
}
