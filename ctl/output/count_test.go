package output

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		noun string
		want string
	}{
		{0, "instance", "0 instances"},
		{1, "instance", "1 instance"},
		{2, "instance", "2 instances"},
		{1, "process", "1 process"},
		{3, "process", "3 processes"},
		{-1, "file", "-1 file"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
