package push

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"drover.dev/ctl/output"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// Options are one push's choices.
type Options struct {
	// Dir holds the app's files.
	Dir string
	// App is the app's name and settings; the package fields are filled in by Push.
	App App
	// Wait makes Push wait until every instance is RUNNING. Without it Push returns
	// after desiring the LRP, which is refused when another version of the app runs.
	Wait bool
	// StartTimeout bounds the wait for the instances and for the routers.
	StartTimeout time.Duration
	// KeepInstances makes App.Instances only the count of a first push: when a version
	// of the app is desired, the new one runs as many instances (cf push without -i).
	KeepInstances bool
}

// Result is what a push did.
type Result struct {
	App         App
	ProcessGUID string
	// Staged is false when the version already had an LRP.
	Staged  bool
	Package Package
	// Removed are the process guids of the older versions removed.
	Removed []string
	// URL is where the app is routed.
	URL string
}

// cleanupTimeout bounds the removal of what a failed push created.
const cleanupTimeout = 30 * time.Second

// Push uploads the app in opts.Dir, stages it unless this version already runs,
// desires its LRP, waits for it and replaces older versions (see the package doc).
// On failure it removes the new LRP it created; the stager cleans up its staging
// task, also when the push is interrupted.
func Push(ctx context.Context, opts Options, d Deps) (Result, error) {
	p := &pusher{Deps: d, out: &progress{w: d.Out}}
	if p.Out == nil {
		p.out.w = io.Discard
	}
	if p.PollInterval <= 0 {
		p.PollInterval = 200 * time.Millisecond
	}
	return p.push(ctx, opts)
}

// pusher runs one push.
type pusher struct {
	Deps
	out *progress
}

func (p *pusher) push(ctx context.Context, opts Options) (Result, error) {
	app := opts.App
	if err := app.Validate(); err != nil {
		return Result{}, err
	}
	if app.Stack == "" {
		stack, err := p.defaultStack(ctx)
		if err != nil {
			return Result{}, err
		}
		app.Stack = stack
		p.out.printf("Using the stager's default stack %s", stack)
	}
	pkg, err := p.upload(ctx, opts.Dir)
	if err != nil {
		return Result{}, err
	}
	app.PackageKey, app.PackageSHA256 = pkg.Key, pkg.SHA256
	res := Result{App: app, ProcessGUID: app.ProcessGUID(), Package: pkg, URL: "http://" + app.Hostname()}
	p.out.printf("Version %s of %s (process guid %s)", app.Version(), app.Name, res.ProcessGUID)

	existing, olds, current, err := p.versions(ctx, app)
	if err != nil {
		return res, err
	}
	if opts.KeepInstances && current != nil && current.GetInstances() != app.Instances {
		app.Instances = current.GetInstances()
		res.App = app
		p.out.printf("Keeping the %s of %s", output.Count(int64(app.Instances), "instance"), current.GetProcessGuid())
	}
	if !opts.Wait && len(olds) > 0 {
		return res, fmt.Errorf("--wait=false is refused: another version of %s runs (%s) and is replaced only after the new one is running", app.Name, strings.Join(olds, ", "))
	}
	if existing != nil {
		if err := p.rescale(ctx, existing, app.Instances); err != nil {
			return res, err
		}
	} else {
		res.Staged = true
		staged, err := p.stage(ctx, app)
		if err != nil {
			return res, err
		}
		if err := p.desire(ctx, app, staged, current.GetAllowSsh()); err != nil {
			return res, err
		}
	}
	if !opts.Wait {
		p.out.printf("Desired %s of %s; not waiting", output.Count(int64(app.Instances), "instance"), res.ProcessGUID)
		return res, nil
	}
	if err := p.waitRunning(ctx, res.ProcessGUID, app.Instances, opts.StartTimeout); err != nil {
		if existing == nil {
			p.remove(ctx, res.ProcessGUID)
		}
		return res, err
	}
	if res.Removed, err = p.rollout(ctx, res.ProcessGUID, olds, opts.StartTimeout); err != nil {
		return res, err
	}
	p.out.printf("Routed at %s", res.URL)
	return res, nil
}

// upload sends the files the fileserver lacks and returns the package.
func (p *pusher) upload(ctx context.Context, dir string) (Package, error) {
	files, err := p.ScanDir(dir)
	if err != nil {
		return Package{}, fmt.Errorf("reading app directory: %w", err)
	}
	if len(files) == 0 {
		return Package{}, fmt.Errorf("app directory %s has no files", dir)
	}
	known, err := p.Blobstore.MatchResources(ctx, files)
	if err != nil {
		return Package{}, fmt.Errorf("resource matching: %w", err)
	}
	missing := Missing(files, known)
	p.out.printf("Uploading %d of %d files (%s), %d already on the server",
		len(missing), len(files), HumanBytes(TotalSize(missing)), len(files)-len(missing))
	pkg, err := p.Blobstore.UploadPackage(ctx, dir, files, missing)
	if err != nil {
		return Package{}, fmt.Errorf("uploading package: %w", err)
	}
	return pkg, nil
}

// versions finds this version's LRP, if any, the process guids of other versions, and
// the current version whose settings a re-push carries over (CurrentVersion).
func (p *pusher) versions(ctx context.Context, app App) (*modelsv1.DesiredLRP, []string, *modelsv1.DesiredLRP, error) {
	return p.versionsOf(ctx, app.GUID(), app.ProcessGUID())
}

// versionsOf is versions for the app appGUID and its version processGUID.
func (p *pusher) versionsOf(ctx context.Context, appGUID, processGUID string) (*modelsv1.DesiredLRP, []string, *modelsv1.DesiredLRP, error) {
	lrps, err := p.BBS.DesiredLRPs(ctx, AppsDomain)
	if err != nil {
		return nil, nil, nil, err
	}
	var existing *modelsv1.DesiredLRP
	var olds []string
	for _, lrp := range lrps {
		guid := lrp.GetProcessGuid()
		switch {
		case guid == processGUID:
			existing = lrp
		case IsVersionOf(guid, appGUID):
			olds = append(olds, guid)
		}
	}
	return existing, olds, CurrentVersion(lrps, appGUID, processGUID), nil
}

// IsVersionOf reports whether processGUID is "<appGUID>-<8 hex>".
func IsVersionOf(processGUID, appGUID string) bool {
	v, ok := strings.CutPrefix(processGUID, appGUID+"-")
	return ok && len(v) == 8 && strings.Trim(v, "0123456789abcdef") == ""
}

// rescale sets the existing LRP's instances when they differ.
func (p *pusher) rescale(ctx context.Context, lrp *modelsv1.DesiredLRP, instances int32) error {
	if lrp.GetInstances() == instances {
		p.out.printf("This version is already desired with %s: nothing to stage", output.Count(int64(instances), "instance"))
		return nil
	}
	p.out.printf("This version is already desired: scaling from %d to %d instances", lrp.GetInstances(), instances)
	return p.BBS.UpdateDesiredLRP(ctx, lrp.GetProcessGuid(), &modelsv1.DesiredLRPUpdate{Instances: &instances})
}

// desire desires the new LRP running the staged droplet, stamped with the push time
// and allowing SSH when the running version did.
func (p *pusher) desire(ctx context.Context, app App, staged *stagerv1.StagingResult, allowSSH bool) error {
	lrp := DesiredLRP(app, staged, p.Blobstore)
	lrp.Annotation = StampPushedAt(lrp.GetAnnotation(), time.Now())
	lrp.AllowSsh = allowSSH
	p.out.printf("Starting %s of %s (%s buildpack: %s)", output.Count(int64(app.Instances), "instance"), lrp.GetProcessGuid(), staged.GetBuildpack(), staged.GetStartCommand())
	return p.BBS.DesireLRP(ctx, lrp)
}

// remove deletes an LRP this push created, even when ctx is over.
func (p *pusher) remove(ctx context.Context, guid string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := p.BBS.RemoveDesiredLRP(cctx, guid); err != nil {
		p.out.printf("warning: could not remove %s: %v", guid, err)
		return
	}
	p.out.printf("Removed %s", guid)
}

// cleanupContext outlives ctx's cancellation for cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// sleep waits one poll interval; it fails when ctx ends first.
func (p *pusher) sleep(ctx context.Context) error {
	t := time.NewTimer(p.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// progress writes lines to the terminal from several goroutines.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

// printf writes one formatted line, its control characters escaped (output.Printable).
func (p *progress) printf(format string, args ...any) {
	p.write(output.Printable(fmt.Sprintf(format, args...)))
}

// logLine writes one line an app or buildpack logged, with output.PrintableLog.
func (p *progress) logLine(prefix, text string) {
	p.write(output.Printable(prefix) + output.PrintableLog(text))
}

func (p *progress) write(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}
