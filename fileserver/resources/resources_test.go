package resources

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sha = "da39a3ee5e6b4b0d3255bfef95601890afd80709"

func TestDecodeMatch(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"ok", `[{"sha1":"` + sha + `","size":0}]`, ""},
		{"empty", `[]`, ""},
		{"not json", `[{`, "resources: want a JSON array"},
		{"object", `{"sha1":"x"}`, "resources: want a JSON array"},
		{"null", `null`, "got null"},
		{"bad sha1", `[{"sha1":"` + sha + `","size":1},{"sha1":"XYZ","size":1}]`, `entry 1: sha1: want 40 lowercase hex digits, got "XYZ"`},
		{"upper sha1", `[{"sha1":"` + strings.ToUpper(sha) + `","size":1}]`, "entry 0: sha1:"},
		{"negative size", `[{"sha1":"` + sha + `","size":-1}]`, "entry 0: size: must not be negative, got -1"},
		{"size a string", `[{"sha1":"` + sha + `","size":"1"}]`, "resources: want a JSON array"},
		{"entry not an object", `["` + sha + `"]`, "resources: want a JSON array"},
		{"trailing data", `[] []`, "resources: want a JSON array of {\"fn\",\"sha1\",\"size\",\"mode\"}: data after the array"},
		{"trailing garbage", `[] x`, "resources: want a JSON array"},
		{"at the limit", `[{"sha1":"` + sha + `","size":1},{"sha1":"` + sha + `","size":2},{"sha1":"` + sha + `","size":3}]`, ""},
		{"over the limit", `[{"sha1":"` + sha + `","size":1},{"sha1":"` + sha + `","size":2},{"sha1":"` + sha + `","size":3},{"sha1":"bad"}]`, "resources: more than 3 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMatch([]byte(tt.body), 3)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestDecodeStopsAtTheLimit: the entry after the limit is a *TooManyError however the
// rest of the body looks (decoding does not go on to it).
func TestDecodeStopsAtTheLimit(t *testing.T) {
	body := `[{"sha1":"` + sha + `","size":1},{"sha1":"` + sha + `","size":1}, this is not JSON`
	_, err := DecodeMatch([]byte(body), 1)
	var tooMany *TooManyError
	require.ErrorAs(t, err, &tooMany)
	require.Equal(t, 1, tooMany.Limit)
	_, err = DecodePackage([]byte(`[{"fn":"a","sha1":"`+sha+`","size":1},{`), 1, 100)
	require.ErrorAs(t, err, &tooMany)
}

func TestDecodePackage(t *testing.T) {
	entry := func(fn string, size int, mode string) string {
		return `{"fn":"` + fn + `","sha1":"` + sha + `","size":` + strconv.Itoa(size) + `,"mode":"` + mode + `"}`
	}
	tests := []struct {
		name string
		body string
		want string
	}{
		{"ok", "[" + entry("a/b.txt", 3, "0755") + "," + entry("c", 1, "") + "]", ""},
		{"parent", "[" + entry("../x", 1, "") + "]", `entry 0: fn "../x": must not contain a ".." segment`},
		{"inner parent", "[" + entry("a/../../x", 1, "") + "]", `fn "a/../../x": must not contain a ".." segment`},
		{"absolute", "[" + entry("/abs", 1, "") + "]", `entry 0: fn "/abs": must be relative, not absolute`},
		{"duplicate", "[" + entry("a", 1, "") + "," + entry("a", 1, "") + "]", `entry 1: fn "a": listed twice`},
		{"dot", "[" + entry("./a", 1, "") + "]", `fn "./a": must be a clean path`},
		{"trailing slash", "[" + entry("a/", 1, "") + "]", `fn "a/": must be a clean path`},
		{"empty fn", "[" + entry("", 1, "") + "]", `fn "": is required`},
		{"backslash", `[{"fn":"a\\b","sha1":"` + sha + `","size":1}]`, "backslash"},
		{"bad mode", "[" + entry("a", 1, "rwx") + "]", `entry 0 (fn "a"): mode: want an octal permission`},
		{"mode too big", "[" + entry("a", 1, "7777") + "]", "mode: want an octal permission"},
		{"too many files", "[" + entry("a", 1, "") + "," + entry("b", 1, "") + "," + entry("c", 1, "") + "]", "resources: more than 2 entries"},
		{"too many bytes", "[" + entry("a", 60, "") + "," + entry("b", 50, "") + "]", "more than the limit of 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := DecodePackage([]byte(tt.body), 2, 100)
			if tt.want == "" {
				require.NoError(t, err)
				require.Equal(t, DefaultMode, list[1].Mode, "mode defaulted")
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// FuzzDecodePackage: decoding never panics, and what it accepts follows the rules.
func FuzzDecodePackage(f *testing.F) {
	for _, seed := range []string{
		`[{"fn":"a","sha1":"` + sha + `","size":1,"mode":"0644"}]`,
		`[{"fn":"../a","sha1":"` + sha + `","size":1}]`, `[]`, `null`, `[{`, `[{"size":-5}]`,
		`[{"fn":"a//b","sha1":"` + sha + `","size":1,"mode":"999"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := DecodePackage(data, 10, 1<<20)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range list {
			require.NoError(t, CheckPath(r.Path))
			require.False(t, seen[r.Path])
			seen[r.Path] = true
			require.True(t, IsSHA1(r.SHA1))
			_, err := ParseMode(r.Mode)
			require.NoError(t, err)
		}
		if list, err := DecodeMatch(data, 5); err == nil {
			require.LessOrEqual(t, len(list), 5)
		}
	})
}
