package dockerref

import (
	"errors"
	"strings"
	"testing"
)

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
	}{
		{"docker:///user/image#tag", Ref{Repository: "user/image", Tag: "tag"}},
		{"docker:///user/image", Ref{Repository: "user/image"}},
		{"docker:///busybox", Ref{Repository: "busybox"}},
		{"docker:///user/image:v1", Ref{Repository: "user/image", Tag: "v1"}},
		{"docker://registry.host:5000/user/image#tag", Ref{Registry: "registry.host:5000", Repository: "user/image", Tag: "tag"}},
		{"docker://127.0.0.1:5000/drover/web#v1", Ref{Registry: "127.0.0.1:5000", Repository: "drover/web", Tag: "v1"}},
		{"docker://localhost/image", Ref{Registry: "localhost", Repository: "image"}},
		{"docker://[::1]:5000/a/b", Ref{Registry: "[::1]:5000", Repository: "a/b"}},
		{"docker://Registry.Example.COM/a", Ref{Registry: "Registry.Example.COM", Repository: "a"}},
		{"docker://host/repo@sha256:" + hex64, Ref{Registry: "host", Repository: "repo", Digest: "sha256:" + hex64}},
		{"docker:///repo@sha256:" + hex64, Ref{Repository: "repo", Digest: "sha256:" + hex64}},
		{"docker://host/repo:v2@sha256:" + hex64, Ref{Registry: "host", Repository: "repo", Tag: "v2", Digest: "sha256:" + hex64}},
		{"docker://host/repo@sha256:" + hex64 + "#v2", Ref{Registry: "host", Repository: "repo", Tag: "v2", Digest: "sha256:" + hex64}},
		{"docker:///a.b/c_d/e__f/g-h--i#Tag_1.2-x", Ref{Repository: "a.b/c_d/e__f/g-h--i", Tag: "Tag_1.2-x"}},
		{"docker:///r#" + strings.Repeat("t", 128), Ref{Repository: "r", Tag: strings.Repeat("t", 128)}},
		{"docker://h/" + strings.Repeat("a", 255), Ref{Registry: "h", Repository: strings.Repeat("a", 255)}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Parse(c.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.in, err)
			}
			if got != c.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", c.in, got, c.want)
			}
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Fatalf("round trip of %q via %q = %+v, %v", c.in, got.String(), again, err)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct {
		name, in, rule string
	}{
		{"empty", "", "scheme must be docker:"},
		{"other scheme", "preloaded:busybox", "scheme must be docker:"},
		{"uppercase scheme", "DOCKER:///a", "lowercase docker:"},
		{"nothing after scheme", "docker://", "nothing after docker://"},
		{"no slashes", "docker:user/image", "must be followed by //"},
		{"one slash", "docker:/user/image", "must be followed by //"},
		{"three slashes only", "docker:///", "repository is empty"},
		{"host without repo", "docker://ubuntu", "repository is empty"},
		{"host slash without repo", "docker://host:5000/", "repository is empty"},
		{"only a tag", "docker:///#v1", "repository is empty"},
		{"query", "docker:///user/image?x=1", "query string"},
		{"userinfo", "docker://user:secret@host/repo", "credentials in the URL"},
		{"userinfo no password", "docker://user@host/repo", "credentials in the URL"},
		{"bad host", "docker://bad_host/repo", "registry host"},
		{"bad port", "docker://host:port/repo", "registry host"},
		{"uppercase repo", "docker:///User/Image", "must be lowercase"},
		{"double slash in repo", "docker:///a//b", "no empty component"},
		{"trailing slash", "docker:///a/", "no empty component"},
		{"bad repo char", "docker:///a$b", "no empty component"},
		{"leading separator", "docker:///-a", "no empty component"},
		{"repo too long", "docker:///" + strings.Repeat("a", 256), "longer than 255"},
		{"empty tag", "docker:///a#", "tag after # is empty"},
		{"two fragments", "docker:///a#b#c", "only one #"},
		{"digest in fragment", "docker:///a#sha256:" + hex64, "digest goes in the path"},
		{"bad tag char", "docker:///a#v1+x", "tag must be"},
		{"tag starts with dot", "docker:///a#.v1", "tag must be"},
		{"tag too long", "docker:///a#" + strings.Repeat("t", 129), "tag must be"},
		{"bad path tag", "docker:///a:-x", "tag must be"},
		{"empty path tag", "docker:///a:", "tag must be"},
		{"tag twice", "docker:///a:v1#v2", "tag is given twice"},
		{"short digest", "docker:///a@sha256:abc", "digest must be"},
		{"uppercase digest", "docker:///a@sha256:" + strings.ToUpper(hex64), "digest must be"},
		{"unknown digest algorithm", "docker:///a@md5:" + hex64[:32], "digest must be"},
		{"sha512 digest", "docker:///a@sha512:" + hex64 + hex64, "digest must be"},
		{"empty digest", "docker:///a@", "digest must be"},
		{"space", "docker:///a b", "printable ASCII"},
		{"newline", "docker:///a\n", "printable ASCII"},
		{"non-ascii", "docker:///é", "printable ASCII"},
		{"percent", "docker:///a%20b", "no empty component"},
		{"too long", "docker:///" + strings.Repeat("a", MaxLength), "longer than 1024"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.in)
			if err == nil {
				t.Fatalf("Parse(%q) accepted", c.in)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, not ErrInvalid", c.in, err)
			}
			var perr *Error
			if !errors.As(err, &perr) || perr.Rule == "" {
				t.Fatalf("Parse(%q) = %v, not an *Error with a rule", c.in, err)
			}
			if !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("Parse(%q) = %q, want the rule %q", c.in, err, c.rule)
			}
		})
	}
}

func TestErrorNeverRepeatsCredentials(t *testing.T) {
	_, err := Parse("docker://alice:s3cr3t@host/repo")
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "alice") {
		t.Fatalf("error %v must refuse without naming the credentials", err)
	}
}

func TestIsDocker(t *testing.T) {
	for in, want := range map[string]bool{
		"docker:///a": true, "docker:a": true, "Docker://x": true, "docker:": true,
		"preloaded:busybox": false, "dock": false, "": false, "dockerx:/a": false,
	} {
		if got := IsDocker(in); got != want {
			t.Errorf("IsDocker(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestParseImage(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
	}{
		{"busybox", Ref{Repository: "busybox"}},
		{"user/image:tag", Ref{Repository: "user/image", Tag: "tag"}},
		{"127.0.0.1:5000/drover/web:v1", Ref{Registry: "127.0.0.1:5000", Repository: "drover/web", Tag: "v1"}},
		{"foobar:8080/image", Ref{Registry: "foobar:8080", Repository: "image"}},
		{"localhost/image", Ref{Registry: "localhost", Repository: "image"}},
		{"registry.example/a@sha256:" + hex64, Ref{Registry: "registry.example", Repository: "a", Digest: "sha256:" + hex64}},
		{"docker://h:1/a#t", Ref{Registry: "h:1", Repository: "a", Tag: "t"}},
	}
	for _, c := range cases {
		got, err := ParseImage(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseImage(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for in, rule := range map[string]string{
		"":                     "empty",
		"https://docker.io/a":  "no scheme",
		"Upper/Case":           "lowercase",
		"host.example/":        "repository is empty",
		"u:p@host.example/a":   "credentials",
		"a:b:c":                "no empty component",
		"a b":                  "printable ASCII",
		"a@sha256:1234":        "digest must be",
		"host.example/a:bad+t": "tag must be",
	} {
		_, err := ParseImage(in)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), rule) {
			t.Errorf("ParseImage(%q) = %v, want an error with %q", in, err, rule)
		}
	}
}

func TestWithDefaultRegistry(t *testing.T) {
	cases := []struct {
		in, def, want string
	}{
		{"docker:///user/image#tag", "127.0.0.1:5000", "127.0.0.1:5000/user/image:tag"},
		{"docker:///user/image", "127.0.0.1:5000", "127.0.0.1:5000/user/image:latest"},
		{"docker:///busybox", DockerHub, "docker.io/library/busybox:latest"},
		{"docker:///busybox#1.36", "index.docker.io", "index.docker.io/library/busybox:1.36"},
		{"docker://docker.io/user/image#t", "other", "docker.io/user/image:t"},
		{"docker:///busybox", "registry.local", "registry.local/busybox:latest"},
		{"docker://h:1/r@sha256:" + hex64, "other", "h:1/r@sha256:" + hex64},
		{"docker://h:1/r:v@sha256:" + hex64, "other", "h:1/r:v@sha256:" + hex64},
	}
	for _, c := range cases {
		r, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if got := r.WithDefaultRegistry(c.def); got != c.want {
			t.Errorf("%q.WithDefaultRegistry(%q) = %q, want %q", c.in, c.def, got, c.want)
		}
	}
}

func TestRefHelpers(t *testing.T) {
	r, err := Parse("docker:///drover/web#v1")
	if err != nil {
		t.Fatal(err)
	}
	if r.RegistryOr("d:1") != "d:1" || r.Pinned() {
		t.Fatalf("RegistryOr/Pinned wrong for %+v", r)
	}
	p, err := r.WithDigest("sha256:" + hex64)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Pinned() || p.Tag != "" || p.String() != "docker:///drover/web@sha256:"+hex64 {
		t.Fatalf("WithDigest = %+v (%s)", p, p)
	}
	if _, err := r.WithDigest("sha256:xyz"); err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("WithDigest(bad) = %v", err)
	}
	h, _ := Parse("docker://h:5/a")
	if h.RegistryOr("d:1") != "h:5" {
		t.Fatalf("RegistryOr = %q", h.RegistryOr("d:1"))
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"docker:///user/image#tag", "docker://registry.host:5000/user/image#tag",
		"docker://host/repo@sha256:" + hex64, "docker:///a:b", "docker://", "docker:user/image",
		"docker://u:p@h/r", "docker://[::1]:5/a#b", "docker:///a?b", "host.example/a:b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v is not ErrInvalid", s, err)
			}
		} else {
			again, err := Parse(r.String())
			if err != nil || again != r {
				t.Fatalf("Parse(%q) = %+v; round trip via %q = %+v, %v", s, r, r.String(), again, err)
			}
			_ = r.WithDefaultRegistry("registry.example:5000")
		}
		if r, err := ParseImage(s); err == nil {
			again, err := Parse(r.String())
			if err != nil || again != r {
				t.Fatalf("ParseImage(%q) = %+v; Parse(%q) = %+v, %v", s, r, r.String(), again, err)
			}
		}
	})
}
