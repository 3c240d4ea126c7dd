// Package builder is the staging half of drover's lifecycle: it runs Heroku/Cloud Foundry
// buildpacks on an app (detect in order, then supply/finalize or compile, then release),
// and writes the droplet, the build cache and the staging result. The pure parts
// (Procfile and release parsing, the run plan, the -order list) have no I/O; Build wires
// them to the buildpacks' scripts and the file system.
package builder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"drover.dev/lifecycle/result"
)

// Exit statuses of the builder (the stager maps them to staging errors).
const (
	ExitSetup        = 1   // bad flags or a missing app directory
	ExitNoneDetected = 222 // no buildpack detected the app
	ExitBuildFailed  = 223 // a supply/finalize/compile failed, or a buildpack is unusable
	ExitReleaseFail  = 224 // bin/release failed or printed bad YAML, or no web command
	ExitWriteFailed  = 225 // writing the droplet, the output cache or the result failed
)

// Error is a staging failure with the builder's exit status.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func fail(code int, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Config is one staging run; the paths are the builder's flags.
type Config struct {
	AppDir          string   // the app, built in place (BUILD_DIR)
	BuildpacksDir   string   // holds one directory per buildpack name
	Order           []string // buildpack names in order
	SkipDetect      bool     // run the whole Order as a chain (the user named buildpacks)
	CacheDir        string   // build cache; buildpack NAME gets CacheDir/NAME
	DepsDir         string   // DEPS_DIR
	DropletPath     string
	OutputCachePath string
	ResultPath      string
	Env             []string  // the buildpacks' environment
	Stdout, Stderr  io.Writer // progress and the buildpacks' output
}

// maxCaptured bounds what the builder keeps of bin/detect and bin/release output.
const maxCaptured = 1 << 20

// StagingInfo is the droplet's staging_info.json.
type StagingInfo struct {
	DetectedBuildpack string `json:"detected_buildpack"`
	StartCommand      string `json:"start_command"`
}

// Build stages the app; its error is an *Error carrying the exit status.
func Build(ctx context.Context, cfg Config) (result.Result, error) {
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Stdout, "-----> "+format+"\n", args...) }
	// The scripts run in the app directory: every path they get must be absolute.
	for _, p := range []*string{&cfg.AppDir, &cfg.BuildpacksDir, &cfg.CacheDir, &cfg.DepsDir, &cfg.DropletPath, &cfg.OutputCachePath, &cfg.ResultPath} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return result.Result{}, fail(ExitSetup, "%s: %s", *p, err)
		}
		*p = abs
	}
	if st, err := os.Stat(cfg.AppDir); err != nil || !st.IsDir() {
		return result.Result{}, fail(ExitSetup, "app directory %s not found", cfg.AppDir)
	}
	env := withDefault(cfg.Env, "HOME", "/home/vcap")
	bps, err := loadBuildpacks(cfg.BuildpacksDir, cfg.Order)
	if err != nil {
		return result.Result{}, err
	}
	chain := bps
	detectOutput := ""
	if !cfg.SkipDetect {
		bp, out, err := detect(ctx, cfg, env, bps)
		if err != nil {
			return result.Result{}, err
		}
		say("Detected buildpack: %s", bp.Name)
		chain, detectOutput = []Buildpack{bp}, out
	}
	runs, err := Plan(chain)
	if err != nil {
		return result.Result{}, fail(ExitBuildFailed, "%s", err)
	}
	for i, bp := range chain {
		for _, dir := range []string{cacheDirOf(cfg, bp), filepath.Join(cfg.DepsDir, strconv.Itoa(i))} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return result.Result{}, fail(ExitBuildFailed, "%s", err)
			}
		}
	}
	for _, r := range runs {
		bp := chain[r.Index]
		say("Running %s %s", bp.Name, r.Step)
		args := []string{cfg.AppDir, cacheDirOf(cfg, bp)}
		if r.Step != StepCompile {
			args = append(args, cfg.DepsDir, strconv.Itoa(r.Index))
		}
		code, err := runScript(ctx, bp, r.Step, cfg.AppDir, env, cfg.Stdout, cfg.Stderr, args...)
		if err != nil {
			return result.Result{}, fail(ExitBuildFailed, "%s", err)
		}
		if code != 0 {
			return result.Result{}, fail(ExitBuildFailed, "buildpack %s: bin/%s exited with status %d", bp.Name, r.Step, code)
		}
	}
	final := chain[len(chain)-1]
	types, err := processTypes(ctx, cfg, env, final)
	if err != nil {
		return result.Result{}, err
	}
	res := result.Result{
		Buildpack:    final.Name,
		DetectOutput: truncate(detectOutput, result.MaxCommandLen),
		StartCommand: types["web"],
		ProcessTypes: types,
	}
	for _, bp := range chain {
		res.Buildpacks = append(res.Buildpacks, bp.Name)
	}
	say("Start command: %s", res.StartCommand)
	if err := writeOutputs(cfg, &res, len(chain)); err != nil {
		return result.Result{}, err
	}
	say("Droplet: %d bytes, sha256 %s", res.DropletSize, res.DropletSHA256)
	return res, nil
}

func cacheDirOf(cfg Config, bp Buildpack) string { return filepath.Join(cfg.CacheDir, bp.Name) }

// loadBuildpacks finds each named buildpack and which scripts it has.
func loadBuildpacks(dir string, order []string) ([]Buildpack, error) {
	if len(order) == 0 {
		return nil, fail(ExitSetup, "no buildpacks given (-order)")
	}
	var bps []Buildpack
	var missing []string
	for _, name := range order {
		bp := Buildpack{Name: name, Dir: filepath.Join(dir, name), Has: map[Step]bool{}}
		if st, err := os.Stat(bp.Dir); err != nil || !st.IsDir() {
			missing = append(missing, fmt.Sprintf("buildpack %s: not found at %s", name, bp.Dir))
			continue
		}
		for _, s := range []Step{StepDetect, StepSupply, StepFinalize, StepCompile, StepRelease} {
			if st, err := os.Stat(scriptPath(bp.Dir, s)); err == nil && st.Mode().IsRegular() {
				bp.Has[s] = true
			}
		}
		bps = append(bps, bp)
	}
	if len(missing) > 0 {
		return nil, fail(ExitBuildFailed, "%s", strings.Join(missing, "; "))
	}
	return bps, nil
}

// detect runs each buildpack's bin/detect in order; the first to exit 0 wins.
func detect(ctx context.Context, cfg Config, env []string, bps []Buildpack) (Buildpack, string, error) {
	for _, bp := range bps {
		if !bp.Has[StepDetect] {
			fmt.Fprintf(cfg.Stderr, "builder: buildpack %s has no bin/detect; skipping it\n", bp.Name)
			continue
		}
		var out limitedBuffer
		code, err := runScript(ctx, bp, StepDetect, cfg.AppDir, env, &out, cfg.Stderr, cfg.AppDir)
		if err != nil {
			fmt.Fprintf(cfg.Stderr, "builder: %s\n", err)
			continue
		}
		if code == 0 {
			return bp, strings.TrimSpace(out.String()), nil
		}
	}
	return Buildpack{}, "", fail(ExitNoneDetected, "none of the buildpacks detected the app: %s", strings.Join(names(bps), ", "))
}

func names(bps []Buildpack) []string {
	var out []string
	for _, bp := range bps {
		out = append(out, bp.Name)
	}
	return out
}

// processTypes runs the final buildpack's bin/release and merges the app's Procfile.
func processTypes(ctx context.Context, cfg Config, env []string, final Buildpack) (map[string]string, error) {
	var rel Release
	if final.Has[StepRelease] {
		var out limitedBuffer
		code, err := runScript(ctx, final, StepRelease, cfg.AppDir, env, &out, cfg.Stderr, cfg.AppDir)
		if err != nil {
			return nil, fail(ExitReleaseFail, "%s", err)
		}
		if code != 0 {
			return nil, fail(ExitReleaseFail, "buildpack %s: bin/release exited with status %d", final.Name, code)
		}
		if rel, err = ParseRelease(out.Bytes()); err != nil {
			return nil, fail(ExitReleaseFail, "buildpack %s: bin/release: %s", final.Name, err)
		}
	}
	var procfile map[string]string
	b, err := os.ReadFile(filepath.Join(cfg.AppDir, "Procfile"))
	switch {
	case err == nil:
		if procfile, err = ParseProcfile(b); err != nil {
			return nil, fail(ExitReleaseFail, "%s", err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fail(ExitReleaseFail, "Procfile: %s", err)
	}
	types := ProcessTypes(rel.DefaultProcessTypes, procfile)
	if types["web"] == "" {
		return nil, fail(ExitReleaseFail, "no start command: buildpack %s's bin/release gave no default web process type and the app has no Procfile with a `web:` line", final.Name)
	}
	if len(types) > result.MaxProcessTypes {
		return nil, fail(ExitReleaseFail, "%d process types is more than %d", len(types), result.MaxProcessTypes)
	}
	return types, nil
}

// writeOutputs writes the droplet, the output cache and the result.
func writeOutputs(cfg Config, res *result.Result, nbps int) error {
	info, err := json.Marshal(StagingInfo{DetectedBuildpack: res.Buildpack, StartCommand: res.StartCommand})
	if err != nil {
		return fail(ExitWriteFailed, "staging_info.json: %s", err)
	}
	droplet, err := WriteFileAtomic(cfg.DropletPath, func(w io.Writer) error {
		return writeDroplet(w, cfg, info, nbps)
	})
	if err != nil {
		return fail(ExitWriteFailed, "writing the droplet %s: %s", cfg.DropletPath, err)
	}
	res.DropletSHA256, res.DropletSize = droplet.SHA256, droplet.Size
	if cfg.OutputCachePath != "" {
		if _, err := WriteFileAtomic(cfg.OutputCachePath, func(w io.Writer) error {
			t := NewTarGz(w)
			if err := t.AddDir(cfg.CacheDir, "."); err != nil {
				return err
			}
			return t.Close()
		}); err != nil {
			return fail(ExitWriteFailed, "writing the output cache %s: %s", cfg.OutputCachePath, err)
		}
	}
	b, err := res.Marshal()
	if err != nil {
		return fail(ExitWriteFailed, "the staging result: %s", err)
	}
	if _, err := WriteFileAtomic(cfg.ResultPath, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return fail(ExitWriteFailed, "writing the result %s: %s", cfg.ResultPath, err)
	}
	return nil
}

// writeDroplet writes ./app/, ./deps/, ./profile.d/ (each DEPS_DIR/IDX/profile.d/NAME as
// IDX_NAME) and ./staging_info.json.
func writeDroplet(w io.Writer, cfg Config, info []byte, nbps int) error {
	t := NewTarGz(w)
	if err := t.AddDir(cfg.AppDir, "./app"); err != nil {
		return err
	}
	if err := t.AddDir(cfg.DepsDir, "./deps"); err != nil {
		return err
	}
	if err := t.addEmptyDir("./profile.d"); err != nil {
		return err
	}
	for i := range nbps {
		dir := filepath.Join(cfg.DepsDir, strconv.Itoa(i), "profile.d")
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		sort.Slice(entries, func(a, b int) bool { return entries[a].Name() < entries[b].Name() })
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			if err := t.AddFileFrom(filepath.Join(dir, e.Name()), fmt.Sprintf("./profile.d/%d_%s", i, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := t.AddFile("./staging_info.json", append(info, '\n'), 0o644); err != nil {
		return err
	}
	return t.Close()
}

// withDefault returns env with KEY=value added when env has no KEY.
func withDefault(env []string, key, value string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return env
		}
	}
	return append(slices.Clone(env), key+"="+value)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// limitedBuffer keeps the first maxCaptured bytes written to it and drops the rest.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxCaptured - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
