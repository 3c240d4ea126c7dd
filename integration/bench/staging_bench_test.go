package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drover.dev/devstack/devstacktest"
	fsclient "drover.dev/fileserver/client"
	"drover.dev/fileserver/signedurl"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// stagingRuns is how many cold and how many warm stagings of each app are timed.
const stagingRuns = 3

// traceEnv, when set, prints each staging's log lines with when they arrived.
const traceEnv = "STAGING_TRACE"

// BenchmarkStaging measures, on a real stack (one cell with the bookworm stack, the
// fileserver, the stager), how long the stager takes to stage examples/node-express and
// examples/go-web cold (a new app: no build cache, npm and the Go module proxy fetch
// everything) and warm (the same app again with one source file changed: its build cache
// restores node_modules or the Go module and build caches), and prints warm/cold (issue
// 15's goal: ≤ 0.50). Each staging is timed from Stage to its result; the stager's own
// figure (the task's run) is printed beside it. One untimed staging first has the cell
// import the stack (once per cell), which no later staging pays. STAGING_TRACE=1 prints
// every log line with its arrival time. Run it with `make bench-staging`, or
//
//	go test -run '^$' -bench Staging -benchtime 1x -timeout 30m ./integration/bench/
func BenchmarkStaging(b *testing.B) {
	stack := devstacktest.New(b, devstacktest.Options{Cells: 1, Stager: &devstacktest.StagerOptions{Bookworm: true}})
	key, err := signedurl.ReadKey(stack.Fileserver.Config.SigningKeyFile)
	if err != nil {
		b.Fatal(err)
	}
	files := fsclient.New(stack.Fileserver.URL(), key, nil)
	stager, conn, err := stack.Stager.Dial()
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(b.Context(), 25*time.Minute)
	defer cancel()

	warmup := copyExample(b, filepath.Join(stack.Root, "examples", "node-express"))
	stageOnce(ctx, b, stager, files, warmup, fmt.Sprintf("bench-warmup-%d", time.Now().UnixNano()))

	for b.Loop() {
		for _, app := range []struct{ name, file, v1 string }{
			{"node-express", "server.js", `const version = "v1"`},
			{"go-web", "main.go", `const version = "v1"`},
		} {
			var cold, warm []time.Duration
			for run := range stagingRuns {
				appGUID := fmt.Sprintf("bench-%s-%d-%d", app.name, time.Now().UnixNano(), run)
				dir := copyExample(b, filepath.Join(stack.Root, "examples", app.name))
				cold = append(cold, stageOnce(ctx, b, stager, files, dir, appGUID))
				rewrite(b, filepath.Join(dir, app.file), app.v1, fmt.Sprintf(`const version = "v2-%d"`, run))
				warm = append(warm, stageOnce(ctx, b, stager, files, dir, appGUID))
			}
			c, w := Summarize(cold), Summarize(warm)
			b.ReportMetric(c.P50MS, app.name+"-cold-p50-ms")
			b.ReportMetric(w.P50MS, app.name+"-warm-p50-ms")
			fmt.Printf("staging %s, %d runs each: cold p50 %.0f ms, warm p50 %.0f ms, warm/cold %.2f\n",
				app.name, stagingRuns, c.P50MS, w.P50MS, Ratio(w.P50MS, c.P50MS))
		}
	}
}

// stageOnce uploads dir as a package and stages it for appGUID on bookworm, returning the
// time from Stage to its result.
func stageOnce(ctx context.Context, b *testing.B, stager stagerv1.StagerServiceClient, files *fsclient.Client, dir, appGUID string) time.Duration {
	b.Helper()
	all, err := fsclient.ScanDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	known, err := files.MatchResources(ctx, all)
	if err != nil {
		b.Fatal(err)
	}
	pkg, err := files.UploadPackage(ctx, dir, all, fsclient.Missing(all, known))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	stream, err := stager.Stage(ctx, &stagerv1.StageRequest{AppGuid: appGUID, AppName: "bench", PackageKey: pkg.Key,
		PackageSha256: pkg.SHA256, Stack: "bookworm", MemoryMb: 256, DiskMb: 1024})
	if err != nil {
		b.Fatal(err)
	}
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			b.Fatalf("staging %s ended without a result", appGUID)
		}
		if err != nil {
			b.Fatal(err)
		}
		if l := ev.GetLog(); l != nil && os.Getenv(traceEnv) != "" {
			fmt.Printf("    +%5d ms %s\n", time.Since(start).Milliseconds(), l.GetText())
		}
		if f := ev.GetFailure(); f != nil {
			b.Fatalf("staging %s failed: %s\n%s", appGUID, f.GetReason(), strings.Join(f.GetLastLines(), "\n"))
		}
		if r := ev.GetResult(); r != nil {
			took := time.Since(start)
			fmt.Printf("  %s: %s buildpack, %.0f ms (task %d ms)\n", appGUID, r.GetBuildpack(), Millis(took), r.GetDurationMs())
			return took
		}
	}
}

// copyExample copies an example app's regular files into a temporary directory.
func copyExample(b *testing.B, src string) string {
	b.Helper()
	dst := b.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return dst
}

// rewrite replaces old with new in the file at path.
func rewrite(b *testing.B, path, old, new string) {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		b.Fatalf("%s does not contain %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		b.Fatal(err)
	}
}
