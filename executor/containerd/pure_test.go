package containerd

import (
	"strings"
	"testing"

	"drover.dev/executor"
	"github.com/containerd/containerd/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
)

func TestParseRootFS(t *testing.T) {
	preloaded := map[string]string{"busybox": "/x.tar"}
	schemes := []string{"docker"}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	reg := func(name, registry string) rootFSRef {
		return rootFSRef{Kind: rootFSRegistry, Name: name, Registry: registry}
	}
	for _, tc := range []struct {
		in, def string
		want    rootFSRef
		wantErr bool
	}{
		{in: "preloaded:busybox", want: rootFSRef{Kind: rootFSPreloaded, Name: "busybox"}},
		{in: "preloaded:cflinuxfs4", wantErr: true},
		{in: "docker:///cloudfoundry/grace#v1", want: reg("docker.io/cloudfoundry/grace:v1", "docker.io")},
		{in: "docker:///busybox", want: reg("docker.io/library/busybox:latest", "docker.io")},
		{in: "docker:///drover/web#v1", def: "127.0.0.1:5000", want: reg("127.0.0.1:5000/drover/web:v1", "127.0.0.1:5000")},
		{in: "docker:///busybox", def: "127.0.0.1:5000", want: reg("127.0.0.1:5000/busybox:latest", "127.0.0.1:5000")},
		{in: "docker://registry.local:5000/team/app", want: reg("registry.local:5000/team/app:latest", "registry.local:5000")},
		{in: "docker://registry.local/app:1.2", want: reg("registry.local/app:1.2", "registry.local")},
		{in: "docker://registry.local/app@" + digest, want: reg("registry.local/app@"+digest, "registry.local")},
		{in: "docker:///app@" + digest, def: "127.0.0.1:5000", want: reg("127.0.0.1:5000/app@"+digest, "127.0.0.1:5000")},
		{in: "docker://", wantErr: true},
		{in: "docker:user/image", wantErr: true},
		{in: "docker://user:pw@registry.local/app", wantErr: true},
		{in: "docker:///app@sha256:abc", wantErr: true},
		{in: "docker:///" + strings.Repeat("a", 2000), wantErr: true},
		{in: "oci:///x", wantErr: true},
		{in: "busybox", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			def := tc.def
			if def == "" {
				def = DefaultRegistry
			}
			got, err := parseRootFS(tc.in, preloaded, schemes, def)
			if tc.wantErr {
				require.ErrorIs(t, err, executor.ErrUnsupportedRootFS)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := parseRootFS("docker:///busybox", preloaded, nil, DefaultRegistry)
	require.ErrorIs(t, err, executor.ErrUnsupportedRootFS, "docker is refused unless configured")
}

func TestResolveUser(t *testing.T) {
	const passwd = "# comment:x:0:0::/comment:/bin/sh\n" +
		"root:x:0:0:root:/root:/bin/sh\n" +
		"  \n" +
		"vcap:x:2000:2000::/home/vcap:/bin/sh\n" +
		"toor:x:0:0::/toor:/bin/sh\n" +
		"vcap:x:2001:2001::/second:/bin/sh\n" +
		"huge:x:4294967296:1::/huge:/bin/sh\n" +
		"neg:x:-1:1::/neg:/bin/sh\n" +
		"short:x:3000\n" +
		"broken:x:abc:1::/:/bin/sh\n" +
		"4000:x:4001:4001::/named-by-digits:/bin/sh\n"
	const group = "root:x:0:\nvcap:x:2000:\nstaff:x:50:vcap,other\n# a comment\nadm:x:4:other,vcap\nstaff:x:51:\nneg:x:-5:vcap\n"
	for _, tc := range []struct {
		user    string
		want    containerUser
		wantErr string
	}{
		{user: "", want: containerUser{UID: 0, GID: 0, Name: "root", Home: "/root"}},
		{user: "root", want: containerUser{UID: 0, GID: 0, Name: "root", Home: "/root"}},
		{user: "0", want: containerUser{UID: 0, GID: 0, Name: "root", Home: "/root"}},
		{user: "vcap", want: containerUser{UID: 2000, GID: 2000, AdditionalGIDs: []uint32{50, 4}, Name: "vcap", Home: "/home/vcap"}},
		{user: "2000", want: containerUser{UID: 2000, GID: 2000, AdditionalGIDs: []uint32{50, 4}, Name: "vcap", Home: "/home/vcap"}},
		{user: "2001", want: containerUser{UID: 2001, GID: 2001, AdditionalGIDs: []uint32{50, 4}, Name: "vcap", Home: "/second"}},
		{user: "vcap:staff", want: containerUser{UID: 2000, GID: 50, AdditionalGIDs: []uint32{4}, Name: "vcap", Home: "/home/vcap"}},
		{user: "vcap:4", want: containerUser{UID: 2000, GID: 4, AdditionalGIDs: []uint32{50}, Name: "vcap", Home: "/home/vcap"}},
		{user: "vcap:77", want: containerUser{UID: 2000, GID: 77, AdditionalGIDs: []uint32{50, 4}, Name: "vcap", Home: "/home/vcap"}},
		{user: "2000:2000", want: containerUser{UID: 2000, GID: 2000, AdditionalGIDs: []uint32{50, 4}, Name: "vcap", Home: "/home/vcap"}},
		{user: "4242", want: containerUser{UID: 4242, GID: 4242, Home: "/"}},
		{user: "4242:7", want: containerUser{UID: 4242, GID: 7, Home: "/"}},
		{user: "4242:staff", want: containerUser{UID: 4242, GID: 50, Home: "/"}},
		{user: "toor", want: containerUser{UID: 0, GID: 0, Name: "toor", Home: "/toor"}},
		{user: "4000", want: containerUser{UID: 4001, GID: 4001, Name: "4000", Home: "/named-by-digits"}},
		{user: "4001", want: containerUser{UID: 4001, GID: 4001, Name: "4000", Home: "/named-by-digits"}},
		// An id that is missing or not a number reads as 0, as runc and containerd read it.
		{user: "short", want: containerUser{UID: 3000, Name: "short"}},
		{user: "broken", want: containerUser{UID: 0, GID: 1, Name: "broken", Home: "/"}},
		{user: "nobody", wantErr: `user "nobody": not found in the rootfs /etc/passwd`},
		{user: "huge", wantErr: `user "huge": not found`},
		{user: "neg", wantErr: `user "neg": not found`},
		{user: "# comment", wantErr: `user "# comment": not found`},
		{user: "vcap:nogroup", wantErr: `group "nogroup": not found in the rootfs /etc/group`},
		{user: "4242:nogroup", wantErr: `group "nogroup": not found`},
		{user: "-1", wantErr: `user "-1": not found`},
		{user: "4294967296", wantErr: `user "4294967296": not found`},
	} {
		t.Run(tc.user, func(t *testing.T) {
			got, err := resolveUser(tc.user, strings.NewReader(passwd), strings.NewReader(group))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestResolveUserWithoutPasswdOrGroup(t *testing.T) {
	got, err := resolveUser("", nil, nil)
	require.NoError(t, err, "a rootfs without /etc/passwd still runs as root")
	require.Equal(t, containerUser{Name: "root", Home: "/root"}, got)
	got, err = resolveUser("1000:1001", nil, nil)
	require.NoError(t, err)
	require.Equal(t, containerUser{UID: 1000, GID: 1001, Home: "/"}, got)
	_, err = resolveUser("vcap", nil, nil)
	require.ErrorContains(t, err, `user "vcap": not found`)
	_, err = resolveUser("0:staff", nil, nil)
	require.ErrorContains(t, err, `group "staff": not found`)
}

func TestResolveUserRefusesAnOverlongLine(t *testing.T) {
	long := "vcap:x:2000:2000:" + strings.Repeat("g", 70_000) + ":/home/vcap:/bin/sh\n"
	_, err := resolveUser("vcap", strings.NewReader(long), nil)
	require.ErrorContains(t, err, "read /etc/passwd")
}

func TestMergeEnv(t *testing.T) {
	for _, tc := range []struct {
		base, add, want []string
	}{
		{base: nil, add: nil, want: nil},
		{base: []string{"A=1", "B=2"}, add: []string{"B=3", "C=4"}, want: []string{"A=1", "B=3", "C=4"}},
		{base: []string{"A=1"}, add: []string{"A=2", "A=3"}, want: []string{"A=3"}},
		{base: []string{"PATH=/bin"}, add: []string{"EMPTY="}, want: []string{"PATH=/bin", "EMPTY="}},
	} {
		require.Equal(t, tc.want, mergeEnv(tc.base, tc.add))
	}
}

func TestProcessSpecDerivesFromInit(t *testing.T) {
	base := &specs.Process{Args: []string{"init"}, Env: []string{"PATH=/bin", "HOME=/custom"}, NoNewPrivileges: true,
		Capabilities: &specs.LinuxCapabilities{Effective: []string{"CAP_KILL"}}, Terminal: true}
	got := processSpec(base, executor.ProcessSpec{Path: "/bin/app", Args: []string{"-x"}, Env: []string{"X=1"}, Nofile: 99},
		containerUser{UID: 2000, GID: 2000, Name: "vcap", Home: "/home/vcap"})
	require.Equal(t, []string{"/bin/app", "-x"}, got.Args)
	require.Equal(t, "/", got.Cwd)
	require.False(t, got.Terminal)
	require.True(t, got.NoNewPrivileges)
	require.Equal(t, base.Capabilities, got.Capabilities)
	require.Equal(t, []string{"HOME=/custom", "USER=vcap", "PATH=/bin", "X=1"}, got.Env, "the container env wins over the passwd HOME")
	require.Equal(t, []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 99, Soft: 99}}, got.Rlimits)
	require.Equal(t, []string{"init"}, base.Args, "the base is not modified")
}

func TestCPUShares(t *testing.T) {
	for weight, want := range map[uint32]uint64{100: 1024, 50: 512, 1: 10, 0: 2} {
		require.Equal(t, want, cpuShares(weight), "weight %d", weight)
	}
}

func TestContainerResolvConfDropsLoopbackServers(t *testing.T) {
	got := containerResolvConf("# generated\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nsearch example.com\n\nnameserver ::1\n")
	require.Equal(t, "# generated\nnameserver 10.0.0.2\nsearch example.com\n", string(got))
}

func TestUpperDirOf(t *testing.T) {
	require.Equal(t, "/s/2/fs", upperDirOf([]mount.Mount{{Type: "overlay", Options: []string{"lowerdir=/s/1/fs", "upperdir=/s/2/fs", "workdir=/s/2/work"}}}))
	require.Equal(t, "/s/1/fs", upperDirOf([]mount.Mount{{Type: "bind", Source: "/s/1/fs"}}))
	require.Equal(t, "", upperDirOf(nil))
}

func TestDiskExceededReason(t *testing.T) {
	require.Equal(t, "disk quota exceeded: wrote 21 MB, limit 5 MB", diskExceededReason(20<<20+1, 5))
	require.Equal(t, "disk quota exceeded: wrote 6 MB, limit 5 MB", diskExceededReason(6<<20, 5))
}

func TestLabelsRoundTripTags(t *testing.T) {
	tags := map[string]string{"process-guid": "pg", "domain": "d"}
	labels := containerLabels("ns1", tags)
	require.Equal(t, "ns1", labels[ownerLabel])
	require.Equal(t, tags, tagsFromLabels(labels))
}

func TestConfigValidate(t *testing.T) {
	valid := Config{Socket: "/s.sock", Namespace: "n", StateDir: "/state", PreloadedRootFSes: map[string]string{"busybox": "/b.tar"}}
	require.NoError(t, valid.withDefaults().Validate())
	require.Equal(t, "/state/network", valid.withDefaults().Network.StateDir)
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"socket", func(c *Config) { c.Socket = "" }, "socket"},
		{"namespace", func(c *Config) { c.Namespace = "" }, "namespace"},
		{"state dir", func(c *Config) { c.StateDir = "rel" }, "state_dir"},
		{"preloaded name", func(c *Config) { c.PreloadedRootFSes = map[string]string{"a:b": "/x"} }, "invalid name"},
		{"preloaded path", func(c *Config) { c.PreloadedRootFSes = map[string]string{"a": "x.tar"} }, "must be absolute"},
		{"scheme", func(c *Config) { c.ArbitrarySchemes = []string{"oci"} }, "unsupported scheme"},
		{"user namespace", func(c *Config) {
			c.UserNamespace = &executor.UserNamespace{HostUID: 0, HostGID: 100000, Size: 65536}
		}, "user_namespace.host_uid: must be greater than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.mutate(&c)
			require.ErrorContains(t, c.withDefaults().Validate(), tc.want)
		})
	}
}
