package buildpacks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetect runs every buildpack's bin/detect on apps it must and must not detect.
func TestDetect(t *testing.T) {
	cases := []struct {
		buildpack string
		files     []string
		detects   bool
		output    string
	}{
		{"staticfile", []string{"index.html"}, true, "staticfile"},
		{"staticfile", []string{"Staticfile", "dist/x.html"}, true, "staticfile"},
		{"staticfile", []string{"dist/index.html"}, false, ""},
		{"nodejs", []string{"package.json"}, true, "nodejs"},
		{"nodejs", []string{"server.js"}, false, ""},
		{"go", []string{"go.mod", "main.go"}, true, "go"},
		{"go", []string{"main.go"}, false, ""},
		{"binary", []string{"Procfile"}, true, "binary"},
		{"binary", []string{"serve.sh"}, false, ""},
		{"busybox", []string{"start.sh", "index.html"}, true, "busybox (shell app)"},
		{"busybox", []string{"index.html"}, true, "busybox (static site)"},
		{"busybox", []string{"README.txt"}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.buildpack+"/"+strings.Join(c.files, ","), func(t *testing.T) {
			app := t.TempDir()
			for _, f := range c.files {
				p := filepath.Join(app, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := exec.Command("/bin/sh", filepath.Join(buildpacksDir, c.buildpack, "bin", "detect"), app).Output()
			if (err == nil) != c.detects {
				t.Fatalf("detected: %v, want %v (%v)", err == nil, c.detects, err)
			}
			if got := strings.TrimSpace(string(out)); got != c.output {
				t.Fatalf("detect printed %q, want %q", got, c.output)
			}
		})
	}
}

// TestScriptsExecutable keeps the buildpacks' bin/ scripts executable in the tree.
func TestScriptsExecutable(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(buildpacksDir, "*", "bin", "*"))
	if err != nil || len(scripts) < 15 {
		t.Fatalf("found %d scripts: %v", len(scripts), err)
	}
	for _, s := range scripts {
		st, err := os.Stat(s)
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", s, err)
		}
	}
}
