package push

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// DockerOptions are one docker push's choices.
type DockerOptions struct {
	App DockerApp
	// Wait, StartTimeout and KeepInstances are as in Options.
	Wait          bool
	StartTimeout  time.Duration
	KeepInstances bool
}

// DockerResult is what a docker push did.
type DockerResult struct {
	ProcessGUID string
	// Rootfs is the pinned image the LRP runs (docker://HOST/REPO@sha256:...).
	Rootfs    string
	Port      uint32
	Instances int32
	// Desired is false when this version already had an LRP (it was only scaled).
	Desired bool
	// Removed are the process guids of the older versions removed.
	Removed []string
	// URL is where the app is routed.
	URL string
}

// newPusher is a pusher on d with its defaults.
func newPusher(d Deps) *pusher {
	p := &pusher{Deps: d, out: &progress{w: d.Out}}
	if p.Out == nil {
		p.out.w = io.Discard
	}
	if p.PollInterval <= 0 {
		p.PollInterval = 200 * time.Millisecond
	}
	return p
}

// PushDocker does what Cloud Controller does for a docker app: it reads the image's
// digest and config from its registry (no staging), desires the LRP that runs the image
// pinned to that digest (DockerDesiredLRP), waits for it and replaces older versions of
// the app as Push does. A version already desired is only scaled (and given the
// credentials when some are set). On failure it removes the new LRP it created.
func PushDocker(ctx context.Context, opts DockerOptions, d Deps) (DockerResult, error) {
	p := newPusher(d)
	app := opts.App
	if err := app.Validate(); err != nil {
		return DockerResult{}, err
	}
	if p.Images == nil {
		return DockerResult{}, fmt.Errorf("no image registry client configured")
	}
	p.out.printf("Reading image %s from %s", app.Image, app.Image.Registry)
	img, err := p.Images.Image(ctx, app.Image, app.Credentials)
	if err != nil {
		return DockerResult{}, err
	}
	lrp, err := DockerDesiredLRP(app, img)
	if err != nil {
		return DockerResult{}, err
	}
	guid := lrp.GetProcessGuid()
	res := DockerResult{ProcessGUID: guid, Rootfs: lrp.GetRootfs(), Port: lrp.GetPorts()[0], Instances: app.Instances, URL: "http://" + app.Hostname()}
	p.out.printf("Image %s is %s; version %s of %s (process guid %s)", app.Image, img.Digest, strings.TrimPrefix(guid, app.GUID()+"-"), app.Name, guid)

	existing, olds, current, err := p.versionsOf(ctx, app.GUID(), guid)
	if err != nil {
		return res, err
	}
	if opts.KeepInstances && current != nil && current.GetInstances() != app.Instances {
		app.Instances = current.GetInstances()
		lrp.Instances, res.Instances = app.Instances, app.Instances
		p.out.printf("Keeping the %d instances of %s", app.Instances, current.GetProcessGuid())
	}
	if !opts.Wait && len(olds) > 0 {
		return res, fmt.Errorf("--wait=false is refused: another version of %s runs (%s) and is replaced only after the new one is running", app.Name, strings.Join(olds, ", "))
	}
	if existing != nil {
		if err := p.rescale(ctx, existing, app.Instances); err != nil {
			return res, err
		}
		if err := p.updateCredentials(ctx, guid, app.Credentials); err != nil {
			return res, err
		}
	} else {
		res.Desired = true
		lrp.Annotation = StampPushedAt(lrp.GetAnnotation(), time.Now())
		lrp.AllowSsh = current.GetAllowSsh()
		p.out.printf("Starting %d instances of %s: %s on port %d", app.Instances, guid, commandOf(lrp), res.Port)
		if err := p.BBS.DesireLRP(ctx, lrp); err != nil {
			return res, err
		}
	}
	if !opts.Wait {
		p.out.printf("Desired %d instances of %s; not waiting", app.Instances, guid)
		return res, nil
	}
	if err := p.waitRunning(ctx, guid, app.Instances, opts.StartTimeout); err != nil {
		if existing == nil {
			p.remove(ctx, guid)
		}
		return res, err
	}
	if res.Removed, err = p.rollout(ctx, guid, olds, opts.StartTimeout); err != nil {
		return res, err
	}
	p.out.printf("Routed at %s", res.URL)
	return res, nil
}

// updateCredentials gives an existing version the registry credentials of this push
// (no one but the cells can read the stored ones to compare). No credentials, no call.
func (p *pusher) updateCredentials(ctx context.Context, guid string, creds Credentials) error {
	if creds.Username == "" {
		return nil
	}
	p.out.printf("Updating the registry credentials of %s", guid)
	return p.BBS.UpdateDesiredLRP(ctx, guid, &modelsv1.DesiredLRPUpdate{ImageUsername: &creds.Username, ImagePassword: &creds.Password})
}

// commandOf is the run action's command line, for the progress output.
func commandOf(lrp *modelsv1.DesiredLRP) string {
	run := lrp.GetAction().GetRun()
	return strings.Join(append([]string{run.GetPath()}, run.GetArgs()...), " ")
}
