package models

import (
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// action validates a required action tree at path.
func (v *violations) action(path string, a *modelsv1.Action) {
	if a == nil {
		v.add(path, ruleRequired)
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
		v.action(field(p, "action"), x.Timeout.GetAction())
		if x.Timeout.GetTimeoutMs() <= 0 {
			v.add(field(p, "timeout_ms"), rulePositive)
		}
	case *modelsv1.Action_EmitProgress:
		v.action(field(path, "emit_progress.action"), x.EmitProgress.GetAction())
	case *modelsv1.Action_Try:
		v.action(field(path, "try.action"), x.Try.GetAction())
	case *modelsv1.Action_Serial:
		v.actionList(field(path, "serial.actions"), x.Serial.GetActions())
	case *modelsv1.Action_Parallel:
		v.actionList(field(path, "parallel.actions"), x.Parallel.GetActions())
	case *modelsv1.Action_Codependent:
		v.actionList(field(path, "codependent.actions"), x.Codependent.GetActions())
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

// actionList validates the children of a serial, parallel or codependent action.
func (v *violations) actionList(path string, actions []*modelsv1.Action) {
	if len(actions) == 0 {
		v.add(path, "must have at least one action")
	}
	for i, a := range actions {
		v.action(item(path, i), a)
	}
}

// downloadAction validates a download: from, to, user and the checksum.
func (v *violations) downloadAction(path string, d *modelsv1.DownloadAction) {
	v.required(field(path, "from"), d.GetFrom())
	v.required(field(path, "to"), d.GetTo())
	v.required(field(path, "user"), d.GetUser())
	v.checksum(path, d.GetChecksumAlgorithm(), d.GetChecksumValue())
}

// uploadAction validates an upload: from, to and user.
func (v *violations) uploadAction(path string, u *modelsv1.UploadAction) {
	v.required(field(path, "from"), u.GetFrom())
	v.required(field(path, "to"), u.GetTo())
	v.required(field(path, "user"), u.GetUser())
}

// runAction validates a run: path, user and env names.
func (v *violations) runAction(path string, r *modelsv1.RunAction) {
	v.required(field(path, "path"), r.GetPath())
	v.required(field(path, "user"), r.GetUser())
	v.env(field(path, "env"), r.GetEnv())
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
}

// checksum checks that checksum algorithm and value come together and that the
// algorithm is one the executor can verify.
func (v *violations) checksum(parent, algorithm, value string) {
	v.together(parent, "checksum_algorithm", algorithm, "checksum_value", value)
	if algorithm != "" {
		v.oneOf(field(parent, "checksum_algorithm"), algorithm, true, "md5", "sha1", "sha256")
	}
}
