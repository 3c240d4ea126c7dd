package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func taskFixtures() []*modelsv1.Task {
	return []*modelsv1.Task{
		{TaskGuid: "done", Domain: "staging", State: modelsv1.TaskState_TASK_STATE_COMPLETED, CellId: "cell-1",
			Result: `{"detected_type":"static"}`, CreatedAt: testNow.Add(-90e9).UnixNano(),
			TaskDefinition: &modelsv1.TaskDefinition{Rootfs: "preloaded:busybox", MemoryMb: 256, DiskMb: 1024, LogGuid: "app"}},
		{TaskGuid: "busy", Domain: "staging", State: modelsv1.TaskState_TASK_STATE_RUNNING, CellId: "cell-1"},
		{TaskGuid: "resolving", Domain: "staging", State: modelsv1.TaskState_TASK_STATE_RESOLVING},
	}
}

func TestTaskShow(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.tasks = taskFixtures() })

	res := run(t, ft.env, "task", "show", "done")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	props := map[string]string{}
	for _, row := range rowFields(res.stdout) {
		props[strings.TrimSuffix(row[0], ":")] = strings.Join(row[1:], " ")
	}
	require.Equal(t, "COMPLETED", props["state"])
	require.Equal(t, "cell-1", props["cell_id"])
	require.Equal(t, "preloaded:busybox", props["rootfs"])
	require.Equal(t, `{"detected_type":"static"}`, props["result"])
	require.Equal(t, "-", props["failure_reason"])
	require.Contains(t, props["created"], "(1m30s ago)")

	res = run(t, ft.env, "task", "show", "done", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &view))
	require.Equal(t, "done", view["task_guid"])
	require.Equal(t, "preloaded:busybox", view["task_definition"].(map[string]any)["rootfs"])

	res = run(t, ft.env, "task", "show", "nope")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "ResourceNotFound: task nope not found")
}

func TestTaskCancel(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.tasks = taskFixtures() })
	res := run(t, ft.env, "task", "cancel", "busy")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cancelled task busy\n", res.stdout)
	require.True(t, proto.Equal(&bbsv1.CancelTaskRequest{TaskGuid: "busy"}, ft.bbs.lastRequest(t)))
	require.Equal(t, modelsv1.TaskState_TASK_STATE_COMPLETED, ft.bbs.taskList()[1].GetState())

	res = run(t, ft.env, "task", "cancel", "done")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "InvalidStateTransition")
}

func TestTaskDelete(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.tasks = taskFixtures() })

	res := run(t, ft.env, "task", "delete", "busy")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Equal(t, "droverctl: InvalidStateTransition: task busy is RUNNING: cancel it first\n", res.stderr)
	require.Len(t, ft.bbs.taskList(), 3, "nothing changed")

	res = run(t, ft.env, "task", "delete", "done")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "deleted task done\n", res.stdout)
	reqs := ft.bbs.recorded()
	require.True(t, proto.Equal(&bbsv1.ResolvingTaskRequest{TaskGuid: "done"}, reqs[len(reqs)-2]))
	require.True(t, proto.Equal(&bbsv1.DeleteTaskRequest{TaskGuid: "done"}, reqs[len(reqs)-1]))

	res = run(t, ft.env, "task", "delete", "resolving")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.DeleteTaskRequest{TaskGuid: "resolving"}, ft.bbs.lastRequest(t)), "a resolving task is only deleted")

	require.Equal(t, []string{"busy"}, taskGuids(ft.bbs.taskList()))
}

func taskGuids(tasks []*modelsv1.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.GetTaskGuid())
	}
	return out
}

const seedTask = `{
  "task_guid": "hello-task",
  "domain": "jobs",
  "task_definition": {
    "rootfs": "preloaded:busybox",
    "memory_mb": 64,
    "disk_mb": 64,
    "action": {"run": {"path": "/bin/echo", "args": ["hi"], "user": "root"}},
    "result_file": "/tmp/result"
  }
}`

func TestTaskDesire(t *testing.T) {
	ft := startFakeBBS(t, nil)
	file := filepath.Join(t.TempDir(), "task.json")
	require.NoError(t, os.WriteFile(file, []byte(seedTask), 0o644))

	res := run(t, ft.env, "task", "desire", "-f", file)
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "desired task hello-task in domain jobs\n", res.stdout)
	req := ft.bbs.lastRequest(t).(*bbsv1.DesireTaskRequest)
	require.Equal(t, "hello-task", req.GetTaskGuid())
	require.Equal(t, []string{"hi"}, req.GetTaskDefinition().GetAction().GetRun().GetArgs())

	env := ft.env
	env.Stdin = strings.NewReader(strings.Replace(seedTask, `"domain": "jobs",`, `"domain": "jobs", "bogus": 1,`, 1))
	res = run(t, env, "task", "desire", "-f", "-")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "bogus")

	env.Stdin = strings.NewReader(strings.Replace(seedTask, `"hello-task"`, `"bad guid"`, 1))
	res = run(t, env, "task", "desire", "-f", "-")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "task_guid")
}
