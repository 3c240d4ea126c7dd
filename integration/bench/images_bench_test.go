package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"drover.dev/bbs/client"
	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/images"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// Sizes of the image benchmark (issue 14): runs of one instance each for preloaded:,
// a docker:// image already on the cell (warm) and a never-seen one (cold), then one
// LRP of 20 instances of a never-seen image on one cell.
const (
	imageWarmRuns     = 10
	imageColdRuns     = 5
	imageManyInstance = 20
)

// BenchmarkImages measures desire→RUNNING (the RUNNING event, so the first passing HTTP
// health check is included) on a real stack with the private registries:
// preloaded:busybox against docker://REGISTRY/drover/web#v1 already pulled (warm), a
// fresh image per run (cold: the pull is included; the cell's own pull time comes from
// its image-pulled log line), and 20 instances of a fresh image on one cell, which must
// pull once. Run it with `make bench-images`, i.e.
//
//	go test -run '^$' -bench Images -benchtime 1x -timeout 30m ./integration/bench/
func BenchmarkImages(b *testing.B) {
	stack := devstacktest.New(b, devstacktest.Options{Cells: 1, Registry: true, ConfigureRep: func(_ int, c *repconfig.Config) {
		c.Executor.ImageGCGrace = libconfig.Duration(time.Hour) // warm runs find the image
	}})
	bbs := devstacktest.Client(b, stack, 0)
	ctx, cancel := context.WithTimeout(b.Context(), 25*time.Minute)
	defer cancel()
	watch := watchRunning(ctx, b, bbs)
	plain := stack.Registry.Plain
	rep := stack.Reps[0]

	for b.Loop() {
		run := func(name string, lrp func(guid string) *modelsv1.DesiredLRP) time.Duration {
			guid := fmt.Sprintf("bench-%s-%d", name, time.Now().UnixNano())
			start := time.Now()
			desireLRP(ctx, b, bbs, lrp(guid))
			at := watch.wait(ctx, b, guid, 1)
			remove(ctx, b, bbs, guid)
			return at[0].Sub(start)
		}
		web := func(rootfs string) func(string) *modelsv1.DesiredLRP {
			return func(guid string) *modelsv1.DesiredLRP { return webImageLRP(guid, rootfs, 1) }
		}

		// The image goes onto the cell once; the warm runs find it there.
		run("pull", web(plain.DockerURL(images.WebRepository, "v1")))
		var preloaded, warm []time.Duration
		for range imageWarmRuns { // interleaved, so load changes hit both alike
			preloaded = append(preloaded, run("preloaded", func(guid string) *modelsv1.DesiredLRP { return httpdLRP(guid, 1) }))
			warm = append(warm, run("warm", web(plain.DockerURL(images.WebRepository, "v1"))))
		}
		p, w := Summarize(preloaded), Summarize(warm)
		b.ReportMetric(p.P50MS, "preloaded-p50-ms")
		b.ReportMetric(w.P50MS, "warm-p50-ms")
		fmt.Printf("desire→RUNNING, 1 instance, %d runs each: preloaded:busybox p50 %.0f ms (p99 %.0f); docker:// warm p50 %.0f ms (p99 %.0f); warm − preloaded %+.0f ms (goal ≤ +100 ms)\n",
			imageWarmRuns, p.P50MS, p.P99MS, w.P50MS, w.P99MS, w.P50MS-p.P50MS)

		var cold, pulls, overhead []time.Duration
		for i := range imageColdRuns {
			repo := fmt.Sprintf("drover/cold-%d-%d", time.Now().UnixNano(), i)
			pushFresh(ctx, b, plain, repo)
			d := run("cold", web(plain.DockerURL(repo, "v1")))
			pull := pullTime(b, rep, plain.Host()+"/"+repo+":")
			cold, pulls, overhead = append(cold, d), append(pulls, pull), append(overhead, d-pull)
		}
		c, pl, o := Summarize(cold), Summarize(pulls), Summarize(overhead)
		b.ReportMetric(c.P50MS, "cold-p50-ms")
		b.ReportMetric(pl.P50MS, "pull-p50-ms")
		fmt.Printf("desire→RUNNING, 1 instance of a never-seen image, %d runs: p50 %.0f ms (p99 %.0f); the cell's pull p50 %.0f ms; cold − pull p50 %.0f ms (goal ≤ 1000 ms)\n",
			imageColdRuns, c.P50MS, c.P99MS, pl.P50MS, o.P50MS)

		repo := fmt.Sprintf("drover/many-%d", time.Now().UnixNano())
		blobs := pushFresh(ctx, b, plain, repo)
		guid := fmt.Sprintf("bench-many-images-%d", time.Now().UnixNano())
		start := time.Now()
		desireLRP(ctx, b, bbs, webImageLRP(guid, plain.DockerURL(repo, "v1"), imageManyInstance))
		at := watch.wait(ctx, b, guid, imageManyInstance)
		var each []time.Duration
		for _, t := range at {
			each = append(each, t.Sub(start))
		}
		m := Summarize(each)
		fetches, err := plain.BlobFetches(repo)
		if err != nil {
			b.Fatal(err)
		}
		most := 0
		for _, d := range blobs {
			most = max(most, fetches[d])
		}
		pulled := countPulls(b, rep, plain.Host()+"/"+repo+":")
		b.ReportMetric(m.MaxMS, "all20-ms")
		fmt.Printf("desire→RUNNING, %d instances of a never-seen image on one cell: all RUNNING after %.0f ms, per instance p50 %.0f ms; pulls %d, most GETs of one blob %d\n",
			imageManyInstance, m.MaxMS, m.P50MS, pulled, most)
		remove(ctx, b, bbs, guid)
		if pulled != 1 || most != 1 {
			b.Errorf("%d instances of one image: %d pulls, a blob fetched up to %d times (want 1 and 1)", imageManyInstance, pulled, most)
		}
	}
}

// webImageLRP is drover/web at rootfs, run as the image's user (named, as droverctl push
// names it from the image's config), HTTP-checked on 8080.
func webImageLRP(guid, rootfs string, instances int32) *modelsv1.DesiredLRP {
	lrp := httpdLRP(guid, instances)
	lrp.Rootfs = rootfs
	lrp.Action = &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
		Path: "/app/start.sh", Args: []string{fmt.Sprint(images.WebPort)}, User: fmt.Sprint(images.AppUID),
	}}}
	return lrp
}

func desireLRP(ctx context.Context, b *testing.B, bbs *client.Client, lrp *modelsv1.DesiredLRP) {
	b.Helper()
	if _, err := bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
		b.Fatalf("desire %s: %v", lrp.GetProcessGuid(), err)
	}
}

// pushFresh pushes a drover/web:v1 build no registry or cell has seen as repo:v1 and
// returns its blobs' digests (config and layers).
func pushFresh(ctx context.Context, b *testing.B, r *devstack.Registry, repo string) []string {
	b.Helper()
	img, err := images.Web("v1", images.Options{Salt: repo})
	if err != nil {
		b.Fatal(err)
	}
	target, err := r.Target()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := images.Push(ctx, target, repo, "v1", img); err != nil {
		b.Fatal(err)
	}
	cfg, err := img.ConfigName()
	if err != nil {
		b.Fatal(err)
	}
	blobs := []string{cfg.String()}
	layers, err := img.Layers()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			b.Fatal(err)
		}
		blobs = append(blobs, d.String())
	}
	return blobs
}

// pulledLine is the rep's log line for a finished pull.
type pulledLine struct {
	Msg      string  `json:"msg"`
	Image    string  `json:"image"`
	Duration float64 `json:"duration"`
}

// pulls returns the durations the rep logged (image-pulled) for images whose name
// starts with prefix.
func pulls(b *testing.B, rep *devstack.Rep, prefix string) []time.Duration {
	b.Helper()
	f, err := os.Open(rep.StdoutPath())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []time.Duration
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"image-pulled"`) {
			continue
		}
		var l pulledLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "image-pulled" && strings.HasPrefix(l.Image, prefix) {
			out = append(out, time.Duration(l.Duration))
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// pullTime is the duration of the one pull of images named prefix..., waiting briefly
// for the log line.
func pullTime(b *testing.B, rep *devstack.Rep, prefix string) time.Duration {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ds := pulls(b, rep, prefix); len(ds) > 0 {
			return ds[0]
		}
		if time.Now().After(deadline) {
			b.Fatalf("the rep logged no image-pulled line for %s", prefix)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// countPulls is how many pulls of images named prefix... the rep logged.
func countPulls(b *testing.B, rep *devstack.Rep, prefix string) int {
	b.Helper()
	return len(pulls(b, rep, prefix))
}
