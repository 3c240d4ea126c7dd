package integration

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/images"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Deadlines of the image scenarios: a cold pull on a loaded machine is slower than a
// container start from a preloaded rootfs.
const (
	// imageRunningWait bounds the wait for instances of an image to reach RUNNING
	// (pull and unpack included).
	imageRunningWait = 3 * time.Minute
	// crashWait bounds the wait for an instance whose pull fails to report why.
	crashWait = 2 * time.Minute
)

// imageStack is a cell stack with the two private registries (devstacktest's Registry
// option): the plain one is the cells' default registry.
type imageStack struct {
	*cellStack
	registries *devstack.Registries
}

// newImageStack starts a stack with n cells and the registries.
func newImageStack(t *testing.T, n int) *imageStack {
	t.Helper()
	s := devstacktest.New(t, devstacktest.Options{Cells: n, Registry: true})
	return &imageStack{cellStack: &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}, registries: s.Registry}
}

// webAction runs drover/web's entrypoint and cmd as the image's user (no user named).
func webAction() *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
		Path: "/app/start.sh", Args: []string{fmt.Sprint(images.WebPort)},
	}}}
}

// webLRP is an LRP of drover/web at rootfs, health-checked over HTTP on its port, with
// COLOR=red overriding the image's COLOR=blue.
func webLRP(guid, rootfs string, instances int32) *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid:  guid,
		Domain:       cellDomain,
		Instances:    instances,
		Rootfs:       rootfs,
		MemoryMb:     64,
		DiskMb:       64,
		Ports:        []uint32{images.WebPort},
		StartTimeout: 60,
		Env:          []*modelsv1.EnvironmentVariable{{Name: "COLOR", Value: "red"}},
		Action:       webAction(),
		CheckDefinition: &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{
			{HttpCheck: &modelsv1.HTTPCheck{Port: images.WebPort, Path: "/"}},
		}},
		LogGuid: guid,
	}
}

// waitImageRunning waits (imageRunningWait) until guid has n RUNNING instances and
// returns them by index.
func (is *imageStack) waitImageRunning(t *testing.T, guid string, n int) map[int32]*modelsv1.ActualLRP {
	t.Helper()
	lrps := is.waitActuals(t, guid, imageRunningWait, fmt.Sprintf("%d RUNNING instances", n), func(as []*modelsv1.ActualLRP) bool {
		return countState(as, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING) == n && len(as) == n
	})
	byIndex := map[int32]*modelsv1.ActualLRP{}
	for _, a := range lrps {
		byIndex[a.GetIndex()] = a
	}
	return byIndex
}

// webPage is what drover/web's page says: "drover/web VERSION" then key=value lines.
type webPage struct {
	Version string
	Fields  map[string]string
}

// readPage GETs an instance's page on its host port (retrying until it answers).
func readPage(t *testing.T, a *modelsv1.ActualLRP) webPage {
	t.Helper()
	url := hostURL(t, a, images.WebPort)
	var body string
	var err error
	require.Eventually(t, func() bool {
		body, err = httpGet(url)
		return err == nil
	}, settleWait, cellPoll, "instance %d at %s: %v", a.GetIndex(), url, err)
	return parsePage(body)
}

func parsePage(body string) webPage {
	p := webPage{Fields: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "drover/web "); ok {
			p.Version = strings.TrimSpace(v)
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			p.Fields[k] = v
		}
	}
	return p
}

// waitReason waits until an instance of guid reports a crash reason or placement error
// holding every one of want, and returns that reason.
func (is *imageStack) waitReason(t *testing.T, guid string, want ...string) string {
	t.Helper()
	var reason string
	is.waitActuals(t, guid, crashWait, fmt.Sprintf("a crash reason or placement error holding %q", want), func(as []*modelsv1.ActualLRP) bool {
		for _, a := range as {
			for _, r := range []string{a.GetCrashReason(), a.GetPlacementError()} {
				if r != "" && containsAll(r, want) {
					reason = r
					return true
				}
			}
		}
		return false
	})
	return reason
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// cellNamespace is the containerd namespace of the stack's cell i (0-based).
func (is *imageStack) cellNamespace(i int) string {
	return is.Reps[i].Config.Executor.ContainerdNamespace
}

// snapshots lists the snapshots of cell i's namespace.
func (is *imageStack) snapshots(t *testing.T, i int) []devstack.Snapshot {
	t.Helper()
	snaps, err := is.Containerd.Snapshots(t.Context(), is.cellNamespace(i))
	require.NoError(t, err)
	return snaps
}

// content lists the blobs of cell i's namespace.
func (is *imageStack) content(t *testing.T, i int) []string {
	t.Helper()
	blobs, err := is.Containerd.Content(t.Context(), is.cellNamespace(i))
	require.NoError(t, err)
	return blobs
}

// requireNothingLeaked waits until no cell holds a container, task, netns, veth,
// iptables rule or mount, no active (container) snapshot is left, and every cell's
// committed snapshots are those of baseline (what the cell held before the scenario).
func (is *imageStack) requireNothingLeaked(t *testing.T, baseline map[int][]devstack.Snapshot) {
	t.Helper()
	is.requireHostClean(t)
	for i := range is.Reps {
		var snaps []devstack.Snapshot
		require.Eventually(t, func() bool {
			snaps = is.snapshots(t, i)
			return slices.Equal(snaps, baseline[i])
		}, settleWait, cellPoll, "cell %d's snapshots did not return to what it held before:\nbefore %v\nnow    %v", i, baseline[i], snaps)
	}
}

// snapshotBaseline records every cell's snapshots.
func (is *imageStack) snapshotBaseline(t *testing.T) map[int][]devstack.Snapshot {
	t.Helper()
	out := map[int][]devstack.Snapshot{}
	for i := range is.Reps {
		out[i] = is.snapshots(t, i)
	}
	return out
}

// uniqueWeb builds drover/web:version with a salt unique to the test, so that no
// registry or content store has seen any of its blobs, pushes it into r under repository
// and returns its manifest digest and the digests of its blobs (config and layers).
func uniqueWeb(t *testing.T, r *devstack.Registry, repository, tag string) (string, []string) {
	t.Helper()
	img, err := images.Web(tag, images.Options{Salt: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())})
	require.NoError(t, err)
	target, err := r.Target()
	require.NoError(t, err)
	digest, err := images.Push(t.Context(), target, repository, tag, img)
	require.NoError(t, err)
	var blobs []string
	cfg, err := img.ConfigName()
	require.NoError(t, err)
	blobs = append(blobs, cfg.String())
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		d, err := l.Digest()
		require.NoError(t, err)
		blobs = append(blobs, d.String())
	}
	return digest, blobs
}

// filesHolding walks root and lists the regular files (up to 256 MiB each) holding
// secret, skipping the files in skip (the secret's own file).
func filesHolding(t *testing.T, root, secret string, skip ...string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) || os.IsPermission(err) {
				return nil // a file that went away, or a container's private directory
			}
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || slices.Contains(skip, path) {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 256<<20 {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(data), secret) {
			hits = append(hits, path)
		}
		return nil
	})
	require.NoError(t, err)
	return hits
}

// droverctlOutput runs droverctl with args against the stack (at most 30 s, so that a
// command that follows a stream ends) and returns what it printed.
func (is *imageStack) droverctlOutput(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := droverctlCommand(t, ctx, is.Stack, args...)
	out, err := cmd.CombinedOutput()
	t.Logf("droverctl %s: %v (%d bytes)", strings.Join(args, " "), err, len(out))
	return string(out)
}

// scaleTo sets guid's instances.
func (is *imageStack) scaleTo(t *testing.T, guid string, instances int32) {
	t.Helper()
	_, err := is.bbs.UpdateDesiredLRP(callCtx(t), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: &modelsv1.DesiredLRPUpdate{Instances: &instances}})
	require.NoError(t, err)
}

// removeAll removes the LRPs and waits until their instances are gone.
func (is *imageStack) removeAll(t *testing.T, guids ...string) {
	t.Helper()
	for _, guid := range guids {
		_, err := is.bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
		require.NoError(t, err)
	}
	for _, guid := range guids {
		is.waitActuals(t, guid, settleWait, "all instances gone", func(as []*modelsv1.ActualLRP) bool { return len(as) == 0 })
	}
}
