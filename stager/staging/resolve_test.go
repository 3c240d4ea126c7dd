package staging_test

import (
	"fmt"
	"testing"

	"drover.dev/stager/staging"
)

func registered() []staging.Buildpack {
	return []staging.Buildpack{
		{Name: "go", Stack: "bookworm", Position: 3},
		{Name: "staticfile", Stack: "bookworm", Position: 1},
		{Name: "nodejs", Stack: "bookworm", Position: 2},
		{Name: "binary", Stack: "bookworm", Position: 4},
		{Name: "busybox", Stack: "busybox", Position: 1},
	}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name      string
		requested []string
		stack     string
		want      string
		skip      bool
		err       string
	}{
		{"detect over the stack's list by position", nil, "bookworm", "[staticfile nodejs go binary]", false, ""},
		{"other stack", nil, "busybox", "[busybox]", false, ""},
		{"named in the given order", []string{"nodejs", "go"}, "bookworm", "[nodejs go]", true, ""},
		{"one named", []string{"binary"}, "bookworm", "[binary]", true, ""},
		{"unknown name", []string{"go", "nope"}, "bookworm", "", true, `buildpack "nope" is not registered for stack "bookworm"`},
		{"name of another stack", []string{"busybox"}, "bookworm", "", true, `buildpack "busybox" is not registered for stack "bookworm"`},
		{"none registered", nil, "empty", "", false, `no buildpacks are registered for stack "empty"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bps, skip, err := staging.Resolve(tc.requested, registered(), tc.stack)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(staging.Names(bps)); got != tc.want || skip != tc.skip {
				t.Fatalf("got %s skip=%v, want %s skip=%v", got, skip, tc.want, tc.skip)
			}
		})
	}
}
