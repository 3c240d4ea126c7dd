package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// usernsScript records, inside the container, who it is and whether root may write the
// cell's /etc/hosts (a host file the executor bind-mounts read-write, owned by host root,
// mode 0644), creates a file, then sleeps.
const usernsScript = `id -u > /tmp/id-u; touch /tmp/created-inside
if echo "# written by the container" >> /etc/hosts 2>/tmp/hosts-err; then echo ok > /tmp/hosts-write; else echo refused > /tmp/hosts-write; fi
exec sleep 3600`

// TestCellsUserNamespaces is issue 16's acceptance 1: an unprivileged container runs in
// the cell's user namespace (root inside, the cell's unprivileged host range outside);
// a privileged one is host root. Every other cell scenario of the suite runs with user
// namespaces on as well (devstack.CellUserNamespace).
func TestCellsUserNamespaces(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	userns := cs.Reps[0].Config.Executor.UserNamespace
	require.NotNil(t, userns, "test cells run with user namespaces")

	for _, privileged := range []bool{false, true} {
		t.Run(fmt.Sprintf("privileged=%v", privileged), func(t *testing.T) {
			marker := fmt.Sprintf("USERNS_MARKER=%d", time.Now().UnixNano())
			name, value, _ := strings.Cut(marker, "=")
			guid := fmt.Sprintf("userns-%v-%d", privileged, time.Now().UnixNano())
			lrp := &modelsv1.DesiredLRP{
				ProcessGuid: guid, Domain: cellDomain, Instances: 1, Rootfs: "preloaded:busybox",
				MemoryMb: 64, DiskMb: 64, Privileged: privileged, StartTimeout: 30, LogGuid: guid,
				Env:    []*modelsv1.EnvironmentVariable{{Name: name, Value: value}},
				Action: shAction(usernsScript),
			}
			cs.desire(t, lrp)
			cs.waitRunning(t, guid, 1)
			var pid int
			require.Eventually(t, func() bool {
				pids := envPids(marker, "sleep")
				if len(pids) == 1 {
					pid = pids[0]
				}
				return pid != 0
			}, runningWait, cellPoll, "the instance's sleep process on the host")
			root := filepath.Join("/proc", fmt.Sprint(pid), "root")
			uidMap, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "uid_map"))
			require.NoError(t, err)
			id, err := os.ReadFile(filepath.Join(root, "tmp", "id-u"))
			require.NoError(t, err)
			require.Equal(t, "0", strings.TrimSpace(string(id)), "root inside the container")
			info, err := os.Stat(filepath.Join(root, "tmp", "created-inside"))
			require.NoError(t, err)
			owner := info.Sys().(*syscall.Stat_t).Uid
			hostsWrite, err := os.ReadFile(filepath.Join(root, "tmp", "hosts-write"))
			require.NoError(t, err)
			if privileged {
				require.Equal(t, []string{"0", "0", "4294967295"}, strings.Fields(string(uidMap)), "a privileged container is host root")
				require.EqualValues(t, 0, owner)
				require.Equal(t, "ok", strings.TrimSpace(string(hostsWrite)), "host root may write the bind-mounted host file")
				return
			}
			require.Equal(t, []string{"0", fmt.Sprint(userns.HostUID), fmt.Sprint(userns.Size)}, strings.Fields(string(uidMap)))
			require.EqualValues(t, userns.HostUID, owner, "a file root creates inside is the mapped host uid's")
			require.Equal(t, "refused", strings.TrimSpace(string(hostsWrite)), "root inside may not write a host file bind-mounted read-write")
			cs.removeAndWaitClean(t, guid)
		})
	}
	cs.requireHostClean(t)
}
