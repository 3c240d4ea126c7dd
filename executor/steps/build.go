package steps

import (
	"fmt"
	"strconv"
	"time"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// DefaultSource is the log source of actions when neither they nor Deps name one.
const DefaultSource = "APP"

// Build turns an action tree into a step tree. Run steps get process IDs derived from
// idPrefix and their position in the tree ("action" for a lone run, "action-0-1" for
// the second child of the first child), so that the same tree built again after an
// executor restart finds the same processes. An empty or malformed tree fails with an
// error wrapping executor.ErrStepsInvalid.
func Build(action *modelsv1.Action, deps *Deps, idPrefix string) (Step, error) {
	source := deps.DefaultSource
	if source == "" {
		source = DefaultSource
	}
	return build(action, deps, idPrefix, source, "action")
}

func invalid(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", executor.ErrStepsInvalid, path, fmt.Sprintf(format, args...))
}

// orSource returns s, or the inherited source when s is empty.
func orSource(s, inherited string) string {
	if s != "" {
		return s
	}
	return inherited
}

func build(a *modelsv1.Action, deps *Deps, id, source, path string) (Step, error) {
	if a == nil {
		return nil, invalid(path, "action is empty")
	}
	switch {
	case a.GetRun() != nil:
		r := a.GetRun()
		if r.GetPath() == "" {
			return nil, invalid(path+".run", "path is required")
		}
		return &runStep{deps: deps, model: r, id: id, source: orSource(r.GetLogSource(), source)}, nil
	case a.GetDownload() != nil:
		d := a.GetDownload()
		if d.GetFrom() == "" || d.GetTo() == "" {
			return nil, invalid(path+".download", "from and to are required")
		}
		return &downloadStep{deps: deps, model: d, source: orSource(d.GetLogSource(), source)}, nil
	case a.GetUpload() != nil:
		u := a.GetUpload()
		if u.GetFrom() == "" || u.GetTo() == "" {
			return nil, invalid(path+".upload", "from and to are required")
		}
		return &uploadStep{deps: deps, model: u, source: orSource(u.GetLogSource(), source)}, nil
	case a.GetTimeout() != nil:
		t := a.GetTimeout()
		if t.GetTimeoutMs() <= 0 {
			return nil, invalid(path+".timeout", "timeout_ms must be positive")
		}
		child, err := build(t.GetAction(), deps, id, orSource(t.GetLogSource(), source), path+".timeout.action")
		if err != nil {
			return nil, err
		}
		return &timeoutStep{child: child, timeout: time.Duration(t.GetTimeoutMs()) * time.Millisecond}, nil
	case a.GetTry() != nil:
		t := a.GetTry()
		child, err := build(t.GetAction(), deps, id, orSource(t.GetLogSource(), source), path+".try.action")
		if err != nil {
			return nil, err
		}
		return &tryStep{child: child}, nil
	case a.GetEmitProgress() != nil:
		e := a.GetEmitProgress()
		src := orSource(e.GetLogSource(), source)
		child, err := build(e.GetAction(), deps, id, src, path+".emit_progress.action")
		if err != nil {
			return nil, err
		}
		return &emitProgressStep{child: child, deps: deps, model: e, source: src}, nil
	case a.GetSerial() != nil:
		children, err := buildAll(a.GetSerial().GetActions(), deps, id, orSource(a.GetSerial().GetLogSource(), source), path+".serial")
		if err != nil {
			return nil, err
		}
		return &serialStep{children: children}, nil
	case a.GetParallel() != nil:
		children, err := buildAll(a.GetParallel().GetActions(), deps, id, orSource(a.GetParallel().GetLogSource(), source), path+".parallel")
		if err != nil {
			return nil, err
		}
		return &parallelStep{children: children}, nil
	case a.GetCodependent() != nil:
		children, err := buildAll(a.GetCodependent().GetActions(), deps, id, orSource(a.GetCodependent().GetLogSource(), source), path+".codependent")
		if err != nil {
			return nil, err
		}
		return &codependentStep{children: children}, nil
	default:
		return nil, invalid(path, "no action set")
	}
}

func buildAll(actions []*modelsv1.Action, deps *Deps, id, source, path string) ([]Step, error) {
	if len(actions) == 0 {
		return nil, invalid(path, "actions must not be empty")
	}
	out := make([]Step, 0, len(actions))
	for i, a := range actions {
		s, err := build(a, deps, id+"-"+strconv.Itoa(i), source, fmt.Sprintf("%s.actions[%d]", path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
