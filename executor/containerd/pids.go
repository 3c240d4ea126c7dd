package containerd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/containerd"
)

// initSleepCmdline is the command line of the sleep the init waits on.
var initSleepCmdline = []byte(busyboxMountPath + "\x00sleep\x00")

// appPids are the host pids of the container's processes other than the init and the
// sleep it waits on.
func appPids(ctx context.Context, task containerd.Task) ([]uint32, error) {
	infos, err := task.Pids(ctx)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	initPid := task.Pid()
	var pids []uint32
	for _, p := range infos {
		if p.Pid == initPid || isInitSleep(p.Pid, initPid) {
			continue
		}
		pids = append(pids, p.Pid)
	}
	return pids, nil
}

func isInitSleep(pid, initPid uint32) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.HasPrefix(cmdline, initSleepCmdline) {
		return false
	}
	ppid, ok := parentPid(pid)
	return ok && ppid == initPid
}

// parentPid reads the ppid from /proc/<pid>/stat (the field after the ")" of comm).
func parentPid(pid uint32) (uint32, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.ParseUint(fields[1], 10, 32)
	return uint32(ppid), err == nil
}
