package push

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// RestartResult is what a restart did.
type RestartResult struct {
	// ProcessGUID is the new LRP's.
	ProcessGUID string
	// Removed are the process guids of the versions it replaced.
	Removed []string
}

// RestartGUID is the process guid of a restarted copy of processGUID: the same app
// guid and a new version, 8 hex digits of a SHA-256 over the old guid and now.
func RestartGUID(appGUID, processGUID string, now time.Time) string {
	sum := sha256.Sum256([]byte(processGUID + "\x00" + strconv.FormatInt(now.UnixNano(), 10)))
	return ProcessGUID(appGUID, hex.EncodeToString(sum[:])[:8])
}

// RestartedLRP is a copy of current under guid (version the new one), with what the
// BBS sets cleared; the annotation's version follows, the push time stays.
func RestartedLRP(current *modelsv1.DesiredLRP, guid, version string) *modelsv1.DesiredLRP {
	lrp := proto.Clone(current).(*modelsv1.DesiredLRP)
	lrp.ProcessGuid = guid
	lrp.ModificationTag = nil
	lrp.CreatedAt = 0
	lrp.Annotation = setAnnotationField(lrp.GetAnnotation(), "version", version)
	return lrp
}

// Restart replaces the app version current without downtime, as a rolling
// deployment does: a copy under a new process guid (RestartGUID) is desired with
// the same instances, and once all of them run, current is unrouted and removed
// after the route-emitter routes only the copy (like a push's rollout). A copy that
// does not start in timeout is removed and current keeps serving.
func Restart(ctx context.Context, current *modelsv1.DesiredLRP, timeout time.Duration, d Deps) (RestartResult, error) {
	p := &pusher{Deps: d, out: &progress{w: d.Out}}
	if p.Out == nil {
		p.out.w = io.Discard
	}
	if p.PollInterval <= 0 {
		p.PollInterval = 200 * time.Millisecond
	}
	old := current.GetProcessGuid()
	appGUID, _, ok := SplitProcessGUID(old)
	if !ok {
		return RestartResult{}, fmt.Errorf("%s is not an app version pushed by droverctl (<app guid>-<version>): only those restart without downtime", old)
	}
	if current.GetInstances() == 0 {
		return RestartResult{}, fmt.Errorf("%s desires 0 instances: nothing to restart (scale it up instead)", old)
	}
	guid := RestartGUID(appGUID, old, time.Now())
	_, version, _ := SplitProcessGUID(guid)
	res := RestartResult{ProcessGUID: guid}
	p.out.printf("Restarting %s as %s with %d instances", old, guid, current.GetInstances())
	if err := p.BBS.DesireLRP(ctx, RestartedLRP(current, guid, version)); err != nil {
		return res, fmt.Errorf("desiring %s: %w", guid, err)
	}
	if err := p.waitRunning(ctx, guid, current.GetInstances(), timeout); err != nil {
		p.remove(ctx, guid)
		return res, err
	}
	removed, err := p.rollout(ctx, guid, []string{old}, timeout)
	res.Removed = removed
	return res, err
}
