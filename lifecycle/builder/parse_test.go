package builder

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProcfile(t *testing.T) {
	got, err := ParseProcfile([]byte("# comment\n\nweb: node server.js --port $PORT\nworker:   ./work  \r\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"web": "node server.js --port $PORT", "worker": "./work"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseProcfileRejects(t *testing.T) {
	cases := map[string]string{
		"no colon":       "web node server.js\n",
		"bad name":       "we b: x\n",
		"no command":     "web:\n",
		"twice":          "web: a\nweb: b\n",
		"every bad line": "bad\nweb:\n",
	}
	wants := map[string][]string{
		"no colon":       {"line 1: want `TYPE: COMMAND`"},
		"bad name":       {"line 1: want"},
		"no command":     {`line 1: process type "web" has no command`},
		"twice":          {`line 2: process type "web" is given twice`},
		"every bad line": {"line 1:", "line 2:"},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseProcfile([]byte(in))
			for _, want := range wants[name] {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want %q", err, want)
				}
			}
		})
	}
}

func TestParseRelease(t *testing.T) {
	r, err := ParseRelease([]byte("---\naddons: []\nconfig_vars: {A: b}\ndefault_process_types:\n  web: nginx -g 'daemon off;'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.DefaultProcessTypes["web"] != "nginx -g 'daemon off;'" || r.ConfigVars["A"] != "b" {
		t.Fatalf("got %+v", r)
	}
	for _, empty := range []string{"", "  \n", "---\n{}\n", "---\ndefault_process_types: {}\n"} {
		r, err := ParseRelease([]byte(empty))
		if err != nil || len(r.DefaultProcessTypes) != 0 {
			t.Errorf("%q: got %+v, %v", empty, r, err)
		}
	}
}

func TestParseReleaseRejects(t *testing.T) {
	cases := map[string]string{
		"not yaml":         "default_process_types: [",
		"wrong shape":      "default_process_types: [a, b]\n",
		"empty command":    "default_process_types: {web: ''}\n",
		"bad process name": "default_process_types: {'a b': x}\n",
	}
	wants := map[string]string{
		"not yaml":         "release YAML:",
		"wrong shape":      "release YAML:",
		"empty command":    "default_process_types.web: empty command",
		"bad process name": `process type name "a b"`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseRelease([]byte(in)); err == nil || !strings.Contains(err.Error(), wants[name]) {
				t.Fatalf("error %v, want %q", err, wants[name])
			}
		})
	}
}

func TestProcessTypesProcfileWins(t *testing.T) {
	got := ProcessTypes(map[string]string{"web": " a ", "worker": "w"}, map[string]string{"web": "b"})
	if !reflect.DeepEqual(got, map[string]string{"web": "b", "worker": "w"}) {
		t.Fatalf("got %v", got)
	}
}

func bp(name string, steps ...Step) Buildpack {
	b := Buildpack{Name: name, Has: map[Step]bool{}}
	for _, s := range steps {
		b.Has[s] = true
	}
	return b
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name string
		bps  []Buildpack
		want []Run
	}{
		{"compile only", []Buildpack{bp("go", StepCompile)}, []Run{{0, StepCompile}}},
		{"supply and finalize", []Buildpack{bp("n", StepSupply, StepFinalize, StepCompile)}, []Run{{0, StepSupply}, {0, StepFinalize}}},
		{"finalize without supply", []Buildpack{bp("n", StepFinalize)}, []Run{{0, StepFinalize}}},
		{"supply but compile final", []Buildpack{bp("n", StepSupply, StepCompile)}, []Run{{0, StepCompile}}},
		{"chain", []Buildpack{bp("a", StepSupply), bp("b", StepSupply, StepFinalize), bp("c", StepCompile)},
			[]Run{{0, StepSupply}, {1, StepSupply}, {2, StepCompile}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Plan(c.bps)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestPlanRejects(t *testing.T) {
	_, err := Plan([]Buildpack{bp("a", StepCompile), bp("b", StepCompile), bp("c", StepSupply)})
	for _, want := range []string{
		"buildpack a has no bin/supply, so it cannot run before the final buildpack c",
		"buildpack b has no bin/supply",
		"buildpack c has neither bin/finalize nor bin/compile",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if _, err := Plan(nil); err == nil {
		t.Error("Plan(nil) succeeded")
	}
}

func TestParseOrder(t *testing.T) {
	got, err := ParseOrder("staticfile, nodejs,go,binary")
	if err != nil || !reflect.DeepEqual(got, []string{"staticfile", "nodejs", "go", "binary"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	cases := map[string]string{
		"":                       "entry 1 is empty",
		"a,,b":                   "entry 2 is empty",
		"a/b":                    `"a/b" is not a buildpack name`,
		"..":                     `".." is not a buildpack name`,
		"a,a":                    `"a" is given twice`,
		strings.Repeat("x", 256): "at most 255 bytes",
	}
	for in, want := range cases {
		if _, err := ParseOrder(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOrder(%.20q): error %v, want %q", in, err, want)
		}
	}
}

func TestInterpreter(t *testing.T) {
	cases := map[string][]string{
		"#!/bin/bash\n":           {"/bin/bash"},
		"#! /usr/bin/env python3": {"/usr/bin/env", "python3"},
		"echo hi\n":               {"/bin/sh"},
		"#!\n":                    {"/bin/sh"},
		"":                        {"/bin/sh"},
	}
	for in, want := range cases {
		if got := Interpreter(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Interpreter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestSafeMemberName(t *testing.T) {
	for name, want := range map[string]bool{
		"./app/x": true, "./": true, "app": true,
		"": false, "/etc/passwd": false, "../x": false, "./app/../../x": false, `a\b`: false,
	} {
		if got := SafeMemberName(name); got != want {
			t.Errorf("SafeMemberName(%q) = %v, want %v", name, got, want)
		}
	}
}
