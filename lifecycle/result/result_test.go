package result

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func valid() Result {
	return Result{
		Buildpack:     "nodejs",
		Buildpacks:    []string{"nodejs"},
		DetectOutput:  "nodejs",
		StartCommand:  "npm start",
		ProcessTypes:  map[string]string{"web": "npm start", "worker": "node worker.js"},
		DropletSHA256: strings.Repeat("ab", 32),
		DropletSize:   1234,
	}
}

func encode(t *testing.T, r Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseValid(t *testing.T) {
	r, err := Parse(encode(t, valid()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Buildpack != "nodejs" || r.StartCommand != "npm start" || r.ProcessTypes["worker"] != "node worker.js" || r.DropletSize != 1234 {
		t.Fatalf("parsed %+v", r)
	}
}

func TestParseRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	many := func(n int) map[string]string {
		m := map[string]string{"web": "w"}
		for i := 0; len(m) < n; i++ {
			m[fmt.Sprintf("p%d", i)] = "c"
		}
		return m
	}
	cases := []struct {
		name   string
		mutate func(*Result)
		want   string
	}{
		{"buildpack required", func(r *Result) { r.Buildpack = "" }, "buildpack: required"},
		{"buildpack too long", func(r *Result) { r.Buildpack = long(256) }, "buildpack: 256 bytes is longer than 255"},
		{"buildpack NUL", func(r *Result) { r.Buildpack = "a\x00b" }, "buildpack: contains a NUL byte"},
		{"buildpacks entry empty", func(r *Result) { r.Buildpacks = []string{"a", ""} }, "buildpacks[1]: required"},
		{"buildpacks entry too long", func(r *Result) { r.Buildpacks = []string{long(300)} }, "buildpacks[0]: 300 bytes"},
		{"buildpacks too many", func(r *Result) { r.Buildpacks = make([]string, 33) }, "buildpacks: 33 entries is more than 32"},
		{"detect output too long", func(r *Result) { r.DetectOutput = long(4097) }, "detect_output: 4097 bytes"},
		{"start command required", func(r *Result) { r.StartCommand = "" }, "start_command: required"},
		{"start command too long", func(r *Result) {
			r.StartCommand = long(4097)
			r.ProcessTypes["web"] = r.StartCommand
		}, "start_command: 4097 bytes"},
		{"start command differs from web", func(r *Result) { r.StartCommand = "other" }, `start_command: must equal process_types["web"]`},
		{"no web", func(r *Result) { delete(r.ProcessTypes, "web") }, `process_types: needs a "web" command`},
		{"too many process types", func(r *Result) { r.ProcessTypes = many(33) }, "process_types: 33 entries is more than 32"},
		{"process type name too long", func(r *Result) { r.ProcessTypes[long(256)] = "c" }, "process_types key"},
		{"process type command empty", func(r *Result) { r.ProcessTypes["worker"] = "" }, `process_types["worker"]: required`},
		{"process type command too long", func(r *Result) { r.ProcessTypes["worker"] = long(5000) }, `process_types["worker"]: 5000 bytes`},
		{"sha256 short", func(r *Result) { r.DropletSHA256 = "abc" }, "droplet_sha256: must be 64 lowercase hex digits"},
		{"sha256 upper", func(r *Result) { r.DropletSHA256 = strings.Repeat("AB", 32) }, "droplet_sha256:"},
		{"size zero", func(r *Result) { r.DropletSize = 0 }, "droplet_size: must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := valid()
			c.mutate(&r)
			_, err := Parse(encode(t, r))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestValidateRejectsInvalidUTF8(t *testing.T) {
	// JSON decoding replaces invalid UTF-8, so only a Result built in Go can hold it.
	r := valid()
	r.Buildpack = "\xff"
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "buildpack: not valid UTF-8") {
		t.Fatalf("error %v", err)
	}
}

func TestParseNamesEveryBadField(t *testing.T) {
	r := valid()
	r.Buildpack = ""
	r.DropletSize = -1
	r.DropletSHA256 = ""
	_, err := Parse(encode(t, r))
	for _, want := range []string{"buildpack:", "droplet_size:", "droplet_sha256:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestParseRejectsBadDocuments(t *testing.T) {
	cases := map[string]struct {
		in   string
		want string
	}{
		"too large":     {`{"buildpack":"` + strings.Repeat("x", MaxBytes) + `"}`, "more than the limit"},
		"not json":      {`{`, "not valid JSON"},
		"unknown field": {`{"buildpack":"a","bogus":1}`, "not valid JSON"},
		"wrong type":    {`{"droplet_size":"big"}`, "not valid JSON"},
		"trailing":      {string(mustJSON(t)) + `{}`, "trailing data"},
		"empty":         {``, "not valid JSON"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func mustJSON(t *testing.T) []byte { return encode(t, valid()) }

func TestMarshalRoundTrip(t *testing.T) {
	b, err := valid().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(b); err != nil {
		t.Fatal(err)
	}
	bad := valid()
	bad.Buildpack = ""
	if _, err := bad.Marshal(); err == nil {
		t.Fatal("Marshal accepted an invalid result")
	}
}

func FuzzParseResult(f *testing.F) {
	f.Add(string(mustJSONf(f)))
	f.Add(`{}`)
	f.Add(`{"buildpack":"x","process_types":{"web":"y"},"start_command":"y"}`)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := Parse([]byte(in))
		if err != nil {
			return
		}
		// Whatever Parse accepts is valid and survives a round trip.
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid result: %v", err)
		}
		if r.StartCommand != r.ProcessTypes["web"] || len(r.Buildpack) > MaxNameLen {
			t.Fatalf("accepted %+v", r)
		}
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func mustJSONf(f *testing.F) []byte {
	b, err := json.Marshal(valid())
	if err != nil {
		f.Fatal(err)
	}
	return b
}
