package handlers

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// Bounds of an Exec request.
const (
	MaxExecArgs       = 256
	MaxExecArgBytes   = 8 << 10
	MaxExecEnv        = 256
	MaxExecEnvBytes   = 32 << 10 // one NAME=value
	MaxExecTotalBytes = 256 << 10
	MaxExecUserBytes  = 256
	MaxExecDirBytes   = 4096
	MaxExecGuidBytes  = 1024
	// MaxExecStdinChunk is the most input one ExecRequest may carry.
	MaxExecStdinChunk = 64 << 10
	// MaxConcurrentExecs bounds the execs one rep serves at once.
	MaxConcurrentExecs = 64
)

// ValidateExecStart names every field of start that breaks a rule ("" when none does).
func ValidateExecStart(start *repv1.ExecStart) string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	total := 0
	switch pg := start.GetProcessGuid(); {
	case pg == "":
		add("process_guid: required")
	case len(pg) > MaxExecGuidBytes:
		add("process_guid: at most %d bytes", MaxExecGuidBytes)
	}
	if start.GetIndex() < 0 {
		add("index: must not be negative (got %d)", start.GetIndex())
	}
	if len(start.GetInstanceGuid()) > MaxExecGuidBytes {
		add("instance_guid: at most %d bytes", MaxExecGuidBytes)
	}
	args := start.GetArgs()
	switch {
	case len(args) == 0:
		add("args: required (the command to run)")
	case args[0] == "":
		add("args[0]: the command must not be empty")
	case len(args) > MaxExecArgs:
		add("args: at most %d (got %d)", MaxExecArgs, len(args))
	}
	for i, a := range args {
		total += len(a)
		if len(a) > MaxExecArgBytes {
			add("args[%d]: at most %d bytes", i, MaxExecArgBytes)
		}
		if strings.IndexByte(a, 0) >= 0 {
			add("args[%d]: must not contain a NUL byte", i)
		}
	}
	env := start.GetEnv()
	if len(env) > MaxExecEnv {
		add("env: at most %d variables (got %d)", MaxExecEnv, len(env))
	}
	for i, e := range env {
		total += len(e.GetName()) + len(e.GetValue())
		switch n := e.GetName(); {
		case n == "":
			add("env[%d].name: required", i)
		case strings.ContainsAny(n, "=\x00"):
			add("env[%d].name: must not contain '=' or a NUL byte", i)
		}
		if strings.IndexByte(e.GetValue(), 0) >= 0 {
			add("env[%d].value: must not contain a NUL byte", i)
		}
		if len(e.GetName())+len(e.GetValue()) > MaxExecEnvBytes {
			add("env[%d]: at most %d bytes", i, MaxExecEnvBytes)
		}
	}
	if total > MaxExecTotalBytes {
		add("args and env: at most %d bytes together (got %d)", MaxExecTotalBytes, total)
	}
	if len(start.GetUser()) > MaxExecUserBytes {
		add("user: at most %d bytes", MaxExecUserBytes)
	}
	if len(start.GetDir()) > MaxExecDirBytes {
		add("dir: at most %d bytes", MaxExecDirBytes)
	}
	if d := start.GetDir(); d != "" && !strings.HasPrefix(d, "/") {
		add("dir: must be absolute")
	}
	if sz := start.GetSize(); sz != nil {
		if msg := validateSize(sz); msg != "" {
			add("size: %s", msg)
		}
	}
	return strings.Join(bad, "; ")
}

// validateSize checks a terminal size fits the executor's.
func validateSize(sz *repv1.TerminalSize) string {
	if sz.GetRows() > math.MaxUint16 || sz.GetColumns() > math.MaxUint16 {
		return fmt.Sprintf("rows and columns at most %d (got %dx%d)", math.MaxUint16, sz.GetColumns(), sz.GetRows())
	}
	return ""
}

// terminalSize converts a validated size.
func terminalSize(sz *repv1.TerminalSize) executor.TerminalSize {
	return executor.TerminalSize{Rows: uint16(sz.GetRows()), Columns: uint16(sz.GetColumns())}
}

// SelectExecContainer picks the instance an ExecStart names among containers: the LRP
// container of process_guid and index (and instance_guid when given). found says
// whether there is one; a running one is preferred (an evacuating instance's successor
// may be starting on the same cell).
func SelectExecContainer(start *repv1.ExecStart, containers []executor.Container) (c executor.Container, found bool) {
	for _, ct := range containers {
		if ct.Tags[executor.TagLifecycle] != executor.LifecycleLRP ||
			ct.Tags[executor.TagProcessGuid] != start.GetProcessGuid() ||
			ct.Tags[executor.TagProcessIndex] != strconv.Itoa(int(start.GetIndex())) {
			continue
		}
		if ig := start.GetInstanceGuid(); ig != "" && ct.Guid != ig {
			continue
		}
		if !found || ct.State == executor.StateRunning {
			c, found = ct, true
		}
	}
	return c, found
}

// ExecSpec is the process to run for start in a container whose run info is ri (nil
// when unknown): the user is start's or else the instance's (its first run action's),
// and the env is the run action's followed by start's.
func ExecSpec(start *repv1.ExecStart, ri *executor.RunInfo) executor.InteractiveSpec {
	spec := executor.InteractiveSpec{
		Args: append([]string(nil), start.GetArgs()...),
		User: start.GetUser(),
		Dir:  start.GetDir(),
		TTY:  start.GetTty(),
	}
	if start.GetTty() {
		spec.Size = terminalSize(start.GetSize())
	}
	var run *modelsv1.RunAction
	if ri != nil {
		run = firstRunAction(ri.Action)
	}
	if spec.User == "" {
		spec.User = run.GetUser()
	}
	for _, e := range run.GetEnv() {
		spec.Env = append(spec.Env, e.GetName()+"="+e.GetValue())
	}
	for _, e := range start.GetEnv() {
		spec.Env = append(spec.Env, e.GetName()+"="+e.GetValue())
	}
	return spec
}

// firstRunAction is the first run action of a tree, depth first (nil when none).
func firstRunAction(a *modelsv1.Action) *modelsv1.RunAction {
	if a == nil {
		return nil
	}
	if r := a.GetRun(); r != nil {
		return r
	}
	var children []*modelsv1.Action
	switch {
	case a.GetTimeout() != nil:
		children = []*modelsv1.Action{a.GetTimeout().GetAction()}
	case a.GetEmitProgress() != nil:
		children = []*modelsv1.Action{a.GetEmitProgress().GetAction()}
	case a.GetTry() != nil:
		children = []*modelsv1.Action{a.GetTry().GetAction()}
	case a.GetSerial() != nil:
		children = a.GetSerial().GetActions()
	case a.GetParallel() != nil:
		children = a.GetParallel().GetActions()
	case a.GetCodependent() != nil:
		children = a.GetCodependent().GetActions()
	}
	for _, c := range children {
		if r := firstRunAction(c); r != nil {
			return r
		}
	}
	return nil
}
