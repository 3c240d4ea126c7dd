package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/devstack"
	"drover.dev/devstack/images"
	"drover.dev/lib/handover"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestImages runs docker:// root filesystems on a real cell from the stack's private
// registries (built by devstack/images, never downloaded): issue 14's acceptance 1–5
// and 7. Every scenario ends with nothing left on the host: no container, task, netns,
// mount, and no snapshot beyond those the cell held before.
func TestImages(t *testing.T) {
	is := newImageStack(t, 1)
	plain, auth := is.registries.Plain, is.registries.Auth
	baseline := is.snapshotBaseline(t)

	t.Run("an image runs with its ENV, USER and WORKDIR", func(t *testing.T) {
		guid := "web-named-registry"
		is.desire(t, webLRP(guid, plain.DockerURL(images.WebRepository, "v1"), 2))
		running := is.waitImageRunning(t, guid, 2)
		require.Len(t, running, 2)
		for _, a := range running {
			p := readPage(t, a)
			require.Equal(t, "v1", p.Version, "instance %d", a.GetIndex())
			require.Equal(t, images.WebGreeting, p.Fields["greeting"], "the image's ENV reaches the process")
			require.Equal(t, "red", p.Fields["color"], "the LRP's env overrides the image's")
			require.Equal(t, "1000", p.Fields["uid"], "`id -u` inside is the image's USER")
			require.Equal(t, images.WebWorkdir, p.Fields["workdir"], "the process starts in the image's WORKDIR")
			require.Equal(t, "8080", p.Fields["args"])
		}
		is.removeAndWaitClean(t, guid)
		is.requireNothingLeaked(t, baseline)
	})

	t.Run("a run action's user wins over the image's", func(t *testing.T) {
		guid := "web-as-root"
		lrp := webLRP(guid, plain.DockerURL(images.WebRepository, "v1"), 1)
		lrp.Action.GetRun().User = "root"
		is.desire(t, lrp)
		p := readPage(t, is.waitImageRunning(t, guid, 1)[0])
		require.Equal(t, "0", p.Fields["uid"])
		is.removeAndWaitClean(t, guid)
		is.requireNothingLeaked(t, baseline)
	})

	t.Run("docker:/// pulls from the cell's default registry", func(t *testing.T) {
		guid := "web-default-registry"
		is.desire(t, webLRP(guid, "docker:///"+images.WebRepository+"#v2", 1))
		p := readPage(t, is.waitImageRunning(t, guid, 1)[0])
		require.Equal(t, "v2", p.Version)
		is.removeAndWaitClean(t, guid)
		is.requireNothingLeaked(t, baseline)
	})

	t.Run("by digest; a moved tag reaches new instances only", func(t *testing.T) {
		const repo, tag = "drover/moving", "current"
		target, err := plain.Target()
		require.NoError(t, err)
		salt := t.Name() + time.Now().Format(time.RFC3339Nano)
		v1img, err := images.Web("v1", images.Options{Salt: salt})
		require.NoError(t, err)
		v1digest, err := images.Push(t.Context(), target, repo, tag, v1img)
		require.NoError(t, err)

		byTag, byDigest := "moving-by-tag", "moving-by-digest"
		is.desire(t, webLRP(byTag, plain.DockerURL(repo, tag), 1))
		is.desire(t, webLRP(byDigest, "docker://"+plain.Host()+"/"+repo+"@"+v1digest, 1))
		require.Equal(t, "v1", readPage(t, is.waitImageRunning(t, byTag, 1)[0]).Version)
		require.Equal(t, "v1", readPage(t, is.waitImageRunning(t, byDigest, 1)[0]).Version)

		v2img, err := images.Web("v2", images.Options{Salt: salt})
		require.NoError(t, err)
		v2digest, err := images.Push(t.Context(), target, repo, tag, v2img)
		require.NoError(t, err)
		require.NotEqual(t, v1digest, v2digest)

		is.scaleTo(t, byTag, 2)
		is.scaleTo(t, byDigest, 2)
		tagged := is.waitImageRunning(t, byTag, 2)
		require.Equal(t, "v1", readPage(t, tagged[0]).Version, "the running instance keeps the image it started from")
		require.Equal(t, "v2", readPage(t, tagged[1]).Version, "a new instance resolves the tag again")
		pinned := is.waitImageRunning(t, byDigest, 2)
		for _, a := range pinned {
			require.Equal(t, "v1", readPage(t, a).Version, "a digest pins the image (instance %d)", a.GetIndex())
		}
		is.removeAll(t, byTag, byDigest)
		is.requireNothingLeaked(t, baseline)
	})

	t.Run("credentials: right ones run, wrong or missing ones crash unauthorized, and are never shown", func(t *testing.T) {
		password, err := auth.Password()
		require.NoError(t, err)
		wrong := "wrong-" + password[:12] + "-pw"
		url := auth.DockerURL(images.WebRepository, "v1")

		right := webLRP("auth-right", url, 1)
		right.ImageUsername, right.ImagePassword = auth.Username, password
		is.desire(t, right)
		require.Equal(t, "v1", readPage(t, is.waitImageRunning(t, "auth-right", 1)[0]).Version)

		bad := webLRP("auth-wrong", url, 1)
		bad.ImageUsername, bad.ImagePassword = auth.Username, wrong
		is.desire(t, bad)
		reason := is.waitReason(t, "auth-wrong", "unauthorized")
		require.Contains(t, reason, images.WebRepository, "the reason names the image")

		is.desire(t, webLRP("auth-missing", url, 1))
		reason = is.waitReason(t, "auth-missing", "unauthorized")
		require.Contains(t, reason, images.WebRepository, "the reason names the image")

		// Every view a client has while the three LRPs exist.
		views := is.credentialViews(t)
		is.removeAll(t, "auth-right", "auth-wrong", "auth-missing")
		is.requireNothingLeaked(t, baseline)
		views = append(views, is.eventsView(t))
		for _, secret := range []string{password, wrong} {
			for _, v := range views {
				require.False(t, strings.Contains(v.text, secret), "a password shows in %s:\n%s", v.name, v.text)
			}
			require.Empty(t, filesHolding(t, is.Home, secret, auth.PasswordFile), "a password shows in the stack's files")
			for _, dir := range []string{"containerd", "postgres"} {
				logs, err := filepath.Glob(filepath.Join(devstack.DefaultHome(is.Root), dir, "*.log"))
				require.NoError(t, err)
				for _, log := range logs {
					data, err := os.ReadFile(log)
					require.NoError(t, err)
					require.False(t, strings.Contains(string(data), secret), "a password shows in the shared %s", log)
				}
			}
		}
	})

	t.Run("10 instances on one cell pull once; the layers go with the last container", func(t *testing.T) {
		const repo = "drover/once"
		digest, blobs := uniqueWeb(t, plain, repo, "v1")
		guid := "ten-instances"
		is.desire(t, webLRP(guid, plain.DockerURL(repo, "v1"), 10))
		running := is.waitImageRunning(t, guid, 10)
		require.Len(t, countByCell(runningValues(running)), 1, "one cell")
		fetches, err := plain.BlobFetches(repo)
		require.NoError(t, err)
		for _, b := range blobs {
			require.Equal(t, 1, fetches[b], "blob %s was fetched %d times (fetches: %v)", b, fetches[b], fetches)
		}
		held := is.content(t, 0)
		for _, b := range append([]string{digest}, blobs...) {
			require.Contains(t, held, b, "the cell's content store holds the image")
		}

		is.removeAndWaitClean(t, guid)
		var left []string
		require.Eventually(t, func() bool {
			held := is.content(t, 0)
			left = nil
			for _, b := range append([]string{digest}, blobs...) {
				if contains(held, b) {
					left = append(left, b)
				}
			}
			return len(left) == 0
		}, settleWait, cellPoll, "the image's blobs are not collected: %v", left)
		is.requireNothingLeaked(t, baseline)
	})

	t.Run("a multi-layer image applies later layers and whiteouts", func(t *testing.T) {
		guid := "layers-task"
		is.desireTask(t, guid, &modelsv1.TaskDefinition{
			Rootfs:     "docker:///" + images.LayersRepository + "#v1",
			Action:     shAction("ls /data > /tmp/result && cat /data/a.txt >> /tmp/result && pwd >> /tmp/result"),
			ResultFile: "/tmp/result",
		})
		task := is.waitTaskCompleted(t, guid)
		require.False(t, task.GetFailed(), task.GetFailureReason())
		require.Contains(t, task.GetResult(), "a from layer 3", "the later layer's a.txt")
		require.Contains(t, task.GetResult(), "keep.txt")
		require.NotContains(t, task.GetResult(), "gone.txt", "the whiteout deleted gone.txt")
		require.Contains(t, task.GetResult(), "/data", "the image's WORKDIR")
		_, err := is.bbs.ResolvingTask(callCtx(t), &bbsv1.ResolvingTaskRequest{TaskGuid: guid})
		require.NoError(t, err)
		_, err = is.bbs.DeleteTask(callCtx(t), &bbsv1.DeleteTaskRequest{TaskGuid: guid})
		require.NoError(t, err)
		is.requireNothingLeaked(t, baseline)
	})

	t.Run("bad input is refused naming rootfs; unknown images and registries are named", func(t *testing.T) {
		a := newAPI(t, is.Stack, 0)
		for _, rootfs := range []string{"docker://", "docker:drover/web", "docker:///Drover/Web#v1", "docker://127.0.0.1:5000/drover/web#"} {
			data, err := jsonapi.EncodeDesiredLRP(webLRP("malformed", rootfs, 1))
			require.NoError(t, err)
			code, body := a.do(http.MethodPost, "/v1/desired_lrps", data, nil)
			require.Equal(t, http.StatusBadRequest, code, "rootfs %q: %s", rootfs, body)
			require.Contains(t, string(body), "rootfs", "rootfs %q", rootfs)

			_, err = is.bbs.DesireTask(callCtx(t), &bbsv1.DesireTaskRequest{TaskGuid: "malformed", Domain: cellDomain,
				TaskDefinition: &modelsv1.TaskDefinition{Rootfs: rootfs, Action: shAction("true"), MemoryMb: 16, DiskMb: 16}})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "task rootfs %q: %v", rootfs, err)
			require.ErrorContains(t, err, "rootfs")
		}
		resp, err := is.bbs.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{})
		require.NoError(t, err)
		require.Empty(t, resp.GetDesiredLrps(), "a refused LRP is not stored")

		unknown := "unknown-image"
		is.desire(t, webLRP(unknown, plain.DockerURL("drover/nothing-here", "v1"), 1))
		reason := is.waitReason(t, unknown, "drover/nothing-here", "not found")
		t.Logf("unknown image: %s", reason)
		is.removeAndWaitClean(t, unknown)
		is.requireNothingLeaked(t, baseline)

		taskGuid := "unknown-image-task"
		is.desireTask(t, taskGuid, &modelsv1.TaskDefinition{
			Rootfs: plain.DockerURL("drover/nothing-here", "v1"),
			Action: shAction("true"),
		})
		task := is.waitTaskCompleted(t, taskGuid)
		require.True(t, task.GetFailed(), "a task whose image is unknown fails")
		require.Contains(t, task.GetFailureReason(), "drover/nothing-here")
		require.Contains(t, task.GetFailureReason(), "not found")
		_, err = is.bbs.ResolvingTask(callCtx(t), &bbsv1.ResolvingTaskRequest{TaskGuid: taskGuid})
		require.NoError(t, err)
		_, err = is.bbs.DeleteTask(callCtx(t), &bbsv1.DeleteTaskRequest{TaskGuid: taskGuid})
		require.NoError(t, err)
		is.requireNothingLeaked(t, baseline)

		r, err := handover.Reserve()
		require.NoError(t, err)
		closed := r.Address()
		require.NoError(t, r.Close()) // nothing listens there now
		unreachable := "unreachable-registry"
		is.desire(t, webLRP(unreachable, "docker://"+closed+"/drover/web#v1", 1))
		reason = is.waitReason(t, unreachable, closed, "connection refused")
		t.Logf("unreachable registry: %s", reason)
		is.removeAndWaitClean(t, unreachable)
		is.requireNothingLeaked(t, baseline)
	})

	is.requireNothingLeaked(t, baseline)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// view is something a client sees, by name.
type view struct{ name, text string }

// credentialViews collects the list views of the BBS (gRPC and HTTP) and droverctl's
// output about the stack's LRPs.
func (is *imageStack) credentialViews(t *testing.T) []view {
	t.Helper()
	var out []view
	resp, err := is.bbs.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{})
	require.NoError(t, err)
	out = append(out, view{"ListDesiredLRPs", protojson.Format(resp)})
	infos, err := is.bbs.ListDesiredLRPSchedulingInfos(callCtx(t), &bbsv1.ListDesiredLRPSchedulingInfosRequest{})
	require.NoError(t, err)
	out = append(out, view{"ListDesiredLRPSchedulingInfos", protojson.Format(infos)})
	a := newAPI(t, is.Stack, 0)
	for _, path := range []string{"/v1/desired_lrps", "/v1/actual_lrps"} {
		code, body := a.do(http.MethodGet, path, nil, nil)
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		out = append(out, view{"GET " + path, string(body)})
	}
	for _, args := range [][]string{
		{"desired-lrps"}, {"desired-lrp", "auth-right"}, {"desired-lrp", "auth-wrong"}, {"actual-lrps"},
		{"events", "--after", "0"}, {"logs", "auth-right"}, {"logs", "auth-wrong"},
	} {
		out = append(out, view{"droverctl " + strings.Join(args, " "), is.droverctlOutput(t, args...)})
	}
	return out
}

// eventsView replays the BBS's event stream from its start up to a sentinel LRP's
// creation, as JSON.
func (is *imageStack) eventsView(t *testing.T) view {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	zero := uint64(0)
	events := subscribe(ctx, t, is.bbs, &zero)
	is.desire(t, httpdLRP(sentinelGuid, 0))
	var b strings.Builder
	for _, e := range receiveUntilSentinel(t, events) {
		b.WriteString(protojson.Format(e))
		b.WriteByte('\n')
	}
	_, err := is.bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: sentinelGuid})
	require.NoError(t, err)
	return view{"the event stream", b.String()}
}

// TestDockerExampleLRPIsValid keeps the README's docker example LRP decodable and valid.
func TestDockerExampleLRPIsValid(t *testing.T) {
	data, err := os.ReadFile("testdata/docker_web_lrp.json")
	require.NoError(t, err)
	lrp, err := jsonapi.DecodeDesiredLRP(data)
	require.NoError(t, err)
	require.NoError(t, models.ValidateDesiredLRP(lrp))
	require.Equal(t, "docker:///"+images.WebRepository+"#v1", lrp.GetRootfs())
}
