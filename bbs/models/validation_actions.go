package models

import (
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// action validates a required action tree at path.
func (v *violations) action(path string, a *modelsv1.Action) {
	v.actionAt(path, a, 1)
}

// actionAt validates an action that is depth levels deep in its tree (the root is 1).
// Below MaxActionDepth it stops: the tree is refused and its deeper levels say nothing
// more.
func (v *violations) actionAt(path string, a *modelsv1.Action, depth int) {
	if a == nil {
		v.add(path, ruleRequired)
		return
	}
	if depth > MaxActionDepth {
		v.addf(path, "action trees must be at most %d actions deep", MaxActionDepth)
		return
	}
	switch x := a.GetAction().(type) {
	case *modelsv1.Action_Download:
		v.downloadAction(field(path, "download"), x.Download)
	case *modelsv1.Action_Upload:
		v.uploadAction(field(path, "upload"), x.Upload)
	case *modelsv1.Action_Run:
		v.runAction(field(path, "run"), x.Run)
	case *modelsv1.Action_Timeout:
		p := field(path, "timeout")
		v.actionAt(field(p, "action"), x.Timeout.GetAction(), depth+1)
		if x.Timeout.GetTimeoutMs() <= 0 {
			v.add(field(p, "timeout_ms"), rulePositive)
		} else {
			v.durationMs(field(p, "timeout_ms"), uint64(x.Timeout.GetTimeoutMs()))
		}
		v.identifier(field(p, "log_source"), x.Timeout.GetLogSource())
	case *modelsv1.Action_EmitProgress:
		p := field(path, "emit_progress")
		v.actionAt(field(p, "action"), x.EmitProgress.GetAction(), depth+1)
		v.identifier(field(p, "log_source"), x.EmitProgress.GetLogSource())
	case *modelsv1.Action_Try:
		p := field(path, "try")
		v.actionAt(field(p, "action"), x.Try.GetAction(), depth+1)
		v.identifier(field(p, "log_source"), x.Try.GetLogSource())
	case *modelsv1.Action_Serial:
		v.actionList(field(path, "serial"), x.Serial.GetActions(), x.Serial.GetLogSource(), depth)
	case *modelsv1.Action_Parallel:
		v.actionList(field(path, "parallel"), x.Parallel.GetActions(), x.Parallel.GetLogSource(), depth)
	case *modelsv1.Action_Codependent:
		v.actionList(field(path, "codependent"), x.Codependent.GetActions(), x.Codependent.GetLogSource(), depth)
	default:
		v.add(path, "must set exactly one action (download, upload, run, timeout, emit_progress, try, parallel, serial or codependent)")
	}
}

// optionalAction validates an action tree at path if it is set.
func (v *violations) optionalAction(path string, a *modelsv1.Action) {
	if a != nil {
		v.action(path, a)
	}
}

// actionList validates a serial, parallel or codependent action at path, depth levels
// deep: between 1 and MaxActionChildren children, each one level deeper.
func (v *violations) actionList(path string, actions []*modelsv1.Action, logSource string, depth int) {
	p := field(path, "actions")
	switch {
	case len(actions) == 0:
		v.add(p, "must have at least one action")
	case len(actions) > MaxActionChildren:
		v.addf(p, "must have at most %d actions", MaxActionChildren)
		return
	}
	for i, a := range actions {
		v.actionAt(item(p, i), a, depth+1)
	}
	v.identifier(field(path, "log_source"), logSource)
}

// downloadAction validates a download: from, to, user and the checksum.
func (v *violations) downloadAction(path string, d *modelsv1.DownloadAction) {
	v.required(field(path, "from"), d.GetFrom())
	v.required(field(path, "to"), d.GetTo())
	v.requiredIdentifier(field(path, "user"), d.GetUser())
	v.checksum(path, d.GetChecksumAlgorithm(), d.GetChecksumValue())
	v.identifier(field(path, "log_source"), d.GetLogSource())
}

// uploadAction validates an upload: from, to and user.
func (v *violations) uploadAction(path string, u *modelsv1.UploadAction) {
	v.required(field(path, "from"), u.GetFrom())
	v.required(field(path, "to"), u.GetTo())
	v.requiredIdentifier(field(path, "user"), u.GetUser())
	v.identifier(field(path, "log_source"), u.GetLogSource())
}

// runAction validates a run: path, user and env names. The user may be empty only in
// a container of a docker image (it then runs as the image's USER).
func (v *violations) runAction(path string, r *modelsv1.RunAction) {
	v.required(field(path, "path"), r.GetPath())
	if v.imageUser {
		v.identifier(field(path, "user"), r.GetUser())
	} else {
		v.requiredIdentifier(field(path, "user"), r.GetUser())
	}
	v.env(field(path, "env"), r.GetEnv())
	v.identifier(field(path, "log_source"), r.GetLogSource())
}

// cachedDependency validates a cached dependency: from, to and the checksum.
func (v *violations) cachedDependency(path string, d *modelsv1.CachedDependency) {
	if d == nil {
		v.add(path, ruleRequired)
		return
	}
	v.required(field(path, "from"), d.GetFrom())
	v.required(field(path, "to"), d.GetTo())
	v.checksum(path, d.GetChecksumAlgorithm(), d.GetChecksumValue())
	v.identifier(field(path, "log_source"), d.GetLogSource())
}

// checksum checks that checksum algorithm and value come together and that the
// algorithm is one the executor can verify.
func (v *violations) checksum(parent, algorithm, value string) {
	v.together(parent, "checksum_algorithm", algorithm, "checksum_value", value)
	if algorithm != "" {
		v.oneOf(field(parent, "checksum_algorithm"), algorithm, true, "md5", "sha1", "sha256")
	}
}
