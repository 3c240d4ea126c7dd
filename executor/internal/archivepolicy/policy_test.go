package archivepolicy

import (
	"archive/tar"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	long := strings.Repeat("a/", MaxPathBytes/2+1)
	for _, tc := range []struct {
		name    string
		dest    string
		hdr     tar.Header
		want    Entry
		wantErr string
	}{
		{name: "plain file", dest: "/home/vcap", hdr: tar.Header{Name: "app/run.sh", Typeflag: tar.TypeReg}, want: Entry{Name: "app/run.sh"}},
		{name: "dot slash prefix", dest: "/home/vcap", hdr: tar.Header{Name: "./app//x/./y", Typeflag: tar.TypeReg}, want: Entry{Name: "app/x/y"}},
		{name: "root dir entry", dest: "/home/vcap", hdr: tar.Header{Name: "./", Typeflag: tar.TypeDir}, want: Entry{Name: ""}},
		{name: "dir entry", dest: "/home/vcap", hdr: tar.Header{Name: "app/", Typeflag: tar.TypeDir}, want: Entry{Name: "app"}},
		{name: "relative dest", dest: "tmp", hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/tmp/x"}, want: Entry{Name: "l"}},
		{name: "dotdot inside a name part", dest: "/d", hdr: tar.Header{Name: "a..b/..c", Typeflag: tar.TypeReg}, want: Entry{Name: "a..b/..c"}},
		{name: "root file entry", dest: "/d", hdr: tar.Header{Name: ".", Typeflag: tar.TypeReg},
			wantErr: `archive entry ".": its name is the destination directory but it is not a directory`},
		{name: "dotdot", dest: "/home/vcap", hdr: tar.Header{Name: "../evil", Typeflag: tar.TypeReg},
			wantErr: `archive entry "../evil": its name has a ".." component`},
		{name: "inner dotdot", dest: "/home/vcap", hdr: tar.Header{Name: "app/../../evil", Typeflag: tar.TypeReg},
			wantErr: `archive entry "app/../../evil": its name has a ".." component`},
		{name: "dotdot that stays inside is refused too", dest: "/home/vcap", hdr: tar.Header{Name: "app/../x", Typeflag: tar.TypeDir},
			wantErr: `archive entry "app/../x": its name has a ".." component`},
		{name: "absolute", dest: "/home/vcap", hdr: tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg},
			wantErr: `archive entry "/etc/passwd": its name is an absolute path`},
		{name: "absolute dir", dest: "/", hdr: tar.Header{Name: "/", Typeflag: tar.TypeDir},
			wantErr: `archive entry "/": its name is an absolute path`},
		{name: "long name", dest: "/d", hdr: tar.Header{Name: long, Typeflag: tar.TypeReg},
			wantErr: `its name is longer than 4096 bytes`},
		{name: "NUL in name", dest: "/d", hdr: tar.Header{Name: "a\x00b", Typeflag: tar.TypeReg},
			wantErr: `archive entry "a\x00b": its name holds a NUL byte`},
		{name: "relative symlink inside", dest: "/home/vcap", hdr: tar.Header{Name: "app/bin/run", Typeflag: tar.TypeSymlink, Linkname: "../lib/run"},
			want: Entry{Name: "app/bin/run"}},
		{name: "symlink to dest itself", dest: "/home/vcap", hdr: tar.Header{Name: "app/up", Typeflag: tar.TypeSymlink, Linkname: ".."},
			want: Entry{Name: "app/up"}},
		{name: "absolute symlink under dest", dest: "/home/vcap", hdr: tar.Header{Name: "app/deps", Typeflag: tar.TypeSymlink, Linkname: "/home/vcap/deps/0"},
			want: Entry{Name: "app/deps"}},
		{name: "any symlink when dest is the root", dest: "/", hdr: tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: "/etc/../../passwd"},
			want: Entry{Name: "x"}},
		{name: "relative symlink escaping", dest: "/home/vcap", hdr: tar.Header{Name: "app/x", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"},
			wantErr: `archive entry "app/x": symlink target "../../etc/passwd" points outside /home/vcap`},
		{name: "absolute symlink escaping", dest: "/home/vcap", hdr: tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: "/"},
			wantErr: `archive entry "x": symlink target "/" points outside /home/vcap`},
		{name: "sibling with common prefix", dest: "/home/vcap", hdr: tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: "/home/vcap2/x"},
			wantErr: `archive entry "x": symlink target "/home/vcap2/x" points outside /home/vcap`},
		{name: "empty symlink", dest: "/d", hdr: tar.Header{Name: "x", Typeflag: tar.TypeSymlink},
			wantErr: `archive entry "x": symlink target "" is empty`},
		{name: "long symlink", dest: "/d", hdr: tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: long},
			wantErr: `symlink target "` + long + `" is longer than 4096 bytes`},
		{name: "hard link inside", dest: "/d", hdr: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "./a/x"},
			want: Entry{Name: "b", HardLink: "a/x"}},
		{name: "hard link escaping", dest: "/d", hdr: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "../etc/shadow"},
			wantErr: `archive entry "b": hard link target "../etc/shadow" has a ".." component`},
		{name: "absolute hard link", dest: "/d", hdr: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"},
			wantErr: `archive entry "b": hard link target "/etc/shadow" is an absolute path`},
		{name: "hard link to dest", dest: "/d", hdr: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "."},
			wantErr: `archive entry "b": hard link target "." is the destination directory`},
		{name: "other types still need a good name", dest: "/d", hdr: tar.Header{Name: "../fifo", Typeflag: tar.TypeFifo},
			wantErr: `archive entry "../fifo": its name has a ".." component`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check(tc.dest, &tc.hdr)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
