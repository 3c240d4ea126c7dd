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
	for _, tc := range []struct {
		in      string
		want    rootFSRef
		wantErr bool
	}{
		{in: "preloaded:busybox", want: rootFSRef{Kind: rootFSPreloaded, Name: "busybox"}},
		{in: "preloaded:cflinuxfs4", wantErr: true},
		{in: "docker:///cloudfoundry/grace#v1", want: rootFSRef{Kind: rootFSRegistry, Name: "docker.io/cloudfoundry/grace:v1"}},
		{in: "docker:///busybox", want: rootFSRef{Kind: rootFSRegistry, Name: "docker.io/library/busybox:latest"}},
		{in: "docker://registry.local:5000/team/app", want: rootFSRef{Kind: rootFSRegistry, Name: "registry.local:5000/team/app:latest"}},
		{in: "docker://registry.local/app:1.2", want: rootFSRef{Kind: rootFSRegistry, Name: "registry.local/app:1.2"}},
		{in: "docker://", wantErr: true},
		{in: "oci:///x", wantErr: true},
		{in: "busybox", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseRootFS(tc.in, preloaded, schemes)
			if tc.wantErr {
				require.ErrorIs(t, err, executor.ErrUnsupportedRootFS)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := parseRootFS("docker:///busybox", preloaded, nil)
	require.ErrorIs(t, err, executor.ErrUnsupportedRootFS, "docker is refused unless configured")
}

func TestResolveUser(t *testing.T) {
	const passwd = "root:x:0:0:root:/root:/bin/sh\nvcap:x:2000:2000::/home/vcap:/bin/sh\n# comment\nbroken:x:abc:1::/:/bin/sh\n"
	const group = "root:x:0:\nvcap:x:2000:\nstaff:x:50:vcap,other\n"
	for _, tc := range []struct {
		user    string
		want    containerUser
		wantErr string
	}{
		{user: "", want: containerUser{UID: 0, GID: 0, Name: "root", Home: "/root"}},
		{user: "vcap", want: containerUser{UID: 2000, GID: 2000, AdditionalGIDs: []uint32{50}, Name: "vcap", Home: "/home/vcap"}},
		{user: "2000", want: containerUser{UID: 2000, GID: 2000, AdditionalGIDs: []uint32{50}, Name: "vcap", Home: "/home/vcap"}},
		{user: "vcap:staff", want: containerUser{UID: 2000, GID: 50, Name: "vcap", Home: "/home/vcap"}},
		{user: "4242:7", want: containerUser{UID: 4242, GID: 7, Home: "/"}},
		{user: "nobody", wantErr: `user "nobody": not found`},
		{user: "vcap:nogroup", wantErr: `group "nogroup": not found`},
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
	got, err := resolveUser("", nil, nil)
	require.NoError(t, err, "a rootfs without /etc/passwd still runs as root")
	require.Equal(t, uint32(0), got.UID)
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.mutate(&c)
			require.ErrorContains(t, c.withDefaults().Validate(), tc.want)
		})
	}
}
