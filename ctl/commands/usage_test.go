package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/commands"
)

// TestUsageErrors checks command lines that must be refused before any BBS call:
// the Env names no BBS and no certificates, so reaching the network would exit 1.
func TestUsageErrors(t *testing.T) {
	env := commands.Env{WorkDir: t.TempDir()}
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no command", nil, "Usage:"},
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"help for an unknown command", []string{"help", "bogus"}, `unknown command "bogus"`},
		{"unknown global flag", []string{"--bogus", "domains"}, "flag provided but not defined: -bogus"},
		{"unknown command flag", []string{"domains", "--domain", "x"}, "flag provided but not defined: -domain"},
		{"too few arguments", []string{"scale", "app"}, "scale takes 2 arguments: APP INSTANCES"},
		{"too many arguments", []string{"domains", "extra"}, "domains takes no arguments"},
		{"negative instances look like a flag", []string{"scale", "app", "-1"}, "flag provided but not defined: -1"},
		{"negative instances after --", []string{"scale", "app", "--", "-1"}, `INSTANCES must be a non-negative integer, not "-1"`},
		{"everything after -- is positional", []string{"scale", "--", "app", "-1"}, `INSTANCES must be a non-negative integer, not "-1"`},
		{"instances not a number", []string{"scale", "app", "many"}, `INSTANCES must be a non-negative integer, not "many"`},
		{"instances too large", []string{"scale", "app", "3000000000"}, "INSTANCES must be a non-negative integer"},
		{"index not a number", []string{"kill", "app", "first"}, `INDEX must be a non-negative integer, not "first"`},
		{"index filter not a number", []string{"actual-lrps", "--index", "x"}, "invalid value"},
		{"index filter too large", []string{"actual-lrps", "--index", "4294967296"}, "--index 4294967296 is too large"},
		{"desire without a file", []string{"desire"}, "desire needs -f FILE"},
		{"events without a position", []string{"events"}, "events needs --follow, --after SEQ, or both"},
		{"events after a negative sequence", []string{"events", "--after", "-3"}, "invalid value"},
		{"ttl with fractions of a second", []string{"set-domain", "d", "--ttl", "1500ms"}, "not a whole number of seconds"},
		{"ttl negative", []string{"set-domain", "d", "--ttl", "-5s"}, "is negative"},
		{"ttl nonsense", []string{"set-domain", "d", "--ttl", "soon"}, "neither a duration"},
		{"logs without a guid", []string{"logs"}, "logs takes 1 argument: APP|GUID"},
		{"logs index not a number", []string{"logs", "app", "--index", "x"}, "invalid value"},
		{"logs index too large", []string{"logs", "app", "--index", "2147483648"}, "--index 2147483648 is too large"},
		{"cell-states takes no arguments", []string{"cell-states", "cell-1"}, "cell-states takes no arguments"},
		{"converger without a command", []string{"converger"}, "converger needs a command: status, pause, resume"},
		{"converger with an unknown command", []string{"converger", "stop"}, `unknown command "converger stop": converger takes status, pause, resume`},
		{"cell without a command", []string{"cell"}, "cell needs a command: cordon, uncordon"},
		{"converger status takes no arguments", []string{"converger", "status", "now"}, "converger status takes no arguments"},
		{"converger pause takes no arguments", []string{"converger", "pause", "because"}, "converger pause takes no arguments"},
		{"cordon without a cell", []string{"cell", "cordon", "--reason", "disk"}, "cell cordon takes 1 argument: CELL_ID"},
		{"uncordon without a cell", []string{"cell", "uncordon"}, "cell uncordon takes 1 argument: CELL_ID"},
		{"evacuate without a cell", []string{"evacuate", "--wait"}, "evacuate takes 1 argument: CELL_ID"},
		{"evacuate with two cells", []string{"evacuate", "cell-1", "cell-2"}, "evacuate takes 1 argument: CELL_ID"},
		{"push without a dir", []string{"push", "--name", "hello"}, "push takes 1 argument: DIR"},
		{"push without a name", []string{"push", "."}, "push needs --name NAME"},
		{"push with a bad name", []string{"push", ".", "--name", "Hello_World"}, "--name \"Hello_World\" must be a DNS label"},
		{"push with bad memory", []string{"push", ".", "--name", "a", "--memory", "lots"}, "--memory: \"lots\" is not a positive size"},
		{"push with bad disk", []string{"push", ".", "--name", "a", "--disk", "0"}, "--disk: \"0\" is not a positive size"},
		{"push with negative instances", []string{"push", ".", "--name", "a", "--instances", "-2"}, "--instances must be a non-negative integer"},
		{"push with a bad domain", []string{"push", ".", "--name", "a", "--domain", "no spaces"}, "--domain \"no spaces\" is not a valid DNS domain"},
		{"push with a bad buildpack", []string{"push", ".", "--name", "a", "-b", "Node/JS"}, `-b/--buildpack "Node/JS" must be 1 to 64 lower-case letters`},
		{"push with too many buildpacks", append([]string{"push", ".", "--name", "a"}, strings.Split(strings.Repeat("-b x ", 17), " ")[:34]...), "-b/--buildpack is given 17 times: at most 16"},
		{"push with an env without =", []string{"push", ".", "--name", "a", "-e", "GREETING"}, `-e/--env "GREETING" must be NAME=VALUE`},
		{"push with a bad env name", []string{"push", ".", "--name", "a", "--env", "MY-VAR=1"}, `-e/--env name "MY-VAR" must be a letter or '_'`},
		{"push with env PORT", []string{"push", ".", "--name", "a", "-e", "PORT=9000"}, "-e/--env PORT is set by drover"},
		{"push naming every bad flag", []string{"push", ".", "--name", "a", "-b", "B", "-e", "1=x", "--stack", "S"}, `--stack "S" must be lower-case letters, digits, '.', '_' and '-'; -b/--buildpack "B" must be 1 to 64 lower-case letters, digits, '.', '_' and '-'; -e/--env name "1"`},
		{"push docker with a buildpack", []string{"push", "--name", "a", "--docker-image", "r.example/x:1", "-b", "go"}, "--buildpack is for pushing a DIR, not --docker-image"},
		{"push docker with env", []string{"push", "--name", "a", "--docker-image", "r.example/x:1", "-e", "A=1"}, "--env is for pushing a DIR, not --docker-image"},
		{"buildpack without a command", []string{"buildpack"}, "buildpack needs a command: create, update, delete"},
		{"buildpack create without a path", []string{"buildpack", "create", "mine"}, "buildpack create takes 2 arguments: NAME PATH"},
		{"buildpack create with a bad name", []string{"buildpack", "create", "My Pack", "."}, `buildpack name "My Pack" must be 1 to 64 lower-case letters`},
		{"buildpack create with a negative position", []string{"buildpack", "create", "mine", ".", "--position", "-1"}, "--position must be a non-negative integer, not -1"},
		{"buildpack update with nothing to change", []string{"buildpack", "update", "mine"}, "buildpack update needs --position N or --path PATH"},
		{"buildpack update with a negative position", []string{"buildpack", "update", "mine", "--position", "-3"}, "--position must be a non-negative integer, not -3"},
		{"buildpack delete without a name", []string{"buildpack", "delete"}, "buildpack delete takes 1 argument: NAME"},
		{"buildpack delete with a bad name", []string{"buildpack", "delete", "UPPER"}, `buildpack name "UPPER" must be`},
		{"buildpacks takes no arguments", []string{"buildpacks", "go"}, "buildpacks takes no arguments"},
		{"push with a zero push timeout", []string{"push", ".", "--name", "a", "--push-timeout", "0"}, "--push-timeout must be positive"},
		{"task without a command", []string{"task"}, "task needs a command: show, cancel, delete, desire"},
		{"task show without a guid", []string{"task", "show"}, "task show takes 1 argument: TASK_GUID"},
		{"task delete with two guids", []string{"task", "delete", "a", "b"}, "task delete takes 1 argument: TASK_GUID"},
		{"task desire without a file", []string{"task", "desire"}, "task desire needs -f FILE"},
		{"zero timeout", []string{"--timeout", "0", "domains"}, "--timeout must be positive"},
		{"bad timeout", []string{"domains", "--timeout", "fast"}, "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, env, tt.args...)
			require.Equal(t, commands.ExitUsage, res.code, "stderr: %s", res.stderr)
			require.Contains(t, res.stderr, tt.wantStderr)
			require.Empty(t, res.stdout)
		})
	}
}

func TestUsageErrorsPointToHelp(t *testing.T) {
	res := run(t, commands.Env{}, "scale", "app")
	require.Equal(t, "droverctl: scale takes 2 arguments: APP INSTANCES\nRun 'droverctl scale -h' for usage.\n", res.stderr)

	res = run(t, commands.Env{}, "bogus")
	require.Equal(t, "droverctl: unknown command \"bogus\"\nRun 'droverctl help' for usage.\n", res.stderr)

	res = run(t, commands.Env{}, "cell", "cordon")
	require.Equal(t, "droverctl: cell cordon takes 1 argument: CELL_ID\nRun 'droverctl cell cordon -h' for usage.\n", res.stderr)

	res = run(t, commands.Env{}, "converger")
	require.Equal(t, "droverctl: converger needs a command: status, pause, resume\nRun 'droverctl converger -h' for usage.\n", res.stderr)
}

func TestFamilyHelp(t *testing.T) {
	env := commands.Env{}
	for _, args := range [][]string{{"converger", "-h"}, {"help", "converger"}, {"converger", "--help"}} {
		res := run(t, env, args...)
		require.Equal(t, commands.ExitOK, res.code, "%v: %s", args, res.stderr)
		require.Contains(t, res.stdout, "\n  droverctl converger [command]\n")
		for _, verb := range []string{"status", "pause", "resume"} {
			require.Contains(t, res.stdout, "\n  "+verb+" ", "%v lists converger %s", args, verb)
		}
		require.NotContains(t, res.stdout, "cordon")
	}
	res := run(t, env, "help", "cell")
	require.Equal(t, commands.ExitOK, res.code)
	require.Contains(t, res.stdout, "\n  cordon ")
	require.Contains(t, res.stdout, "\n  uncordon ")

	res = run(t, env, "help", "converger", "stop")
	require.Equal(t, commands.ExitUsage, res.code)
	require.Contains(t, res.stderr, `unknown command "converger stop"`)
}

func TestHelp(t *testing.T) {
	env := commands.Env{}
	allCommands := []string{"push", "task show", "task cancel", "task delete", "task desire", "domains", "set-domain", "desired-lrps", "desired-lrp", "desire", "scale",
		"delete", "actual-lrps", "kill", "logs", "routes", "tasks", "cells", "cell-states", "events", "locks",
		"converger status", "converger pause", "converger resume", "cell cordon", "cell uncordon", "evacuate",
		"buildpacks", "buildpack create", "buildpack update", "buildpack delete"}

	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := run(t, env, args...)
			require.Equal(t, commands.ExitOK, res.code)
			require.Empty(t, res.stderr)
			for _, name := range allCommands {
				// Families ("task") are listed by their first word.
				require.Contains(t, res.stdout, "\n  "+strings.Fields(name)[0]+" ", "overview lists %s", name)
			}
			for _, text := range []string{"--bbs-address HOST:PORT", "--timeout DURATION", "(default 10s)", "DROVER_HOME", "--json", "completion"} {
				require.Contains(t, res.stdout, text)
			}
		})
	}

	for _, name := range allCommands {
		t.Run(name+" -h", func(t *testing.T) {
			words := strings.Fields(name)
			viaFlag := run(t, env, append(words, "-h")...)
			require.Equal(t, commands.ExitOK, viaFlag.code)
			require.Contains(t, viaFlag.stdout, "Usage:\n  droverctl "+name)
			require.Contains(t, viaFlag.stdout, "Examples:\n  droverctl "+name)
			viaHelp := run(t, env, append([]string{"help"}, words...)...)
			require.Equal(t, viaFlag, viaHelp)
		})
	}

	res := run(t, env, "set-domain", "-h")
	require.Contains(t, res.stdout, "Usage:\n  droverctl set-domain [--ttl DURATION] DOMAIN")
	require.Contains(t, res.stdout, "--ttl DURATION")

	res = run(t, env, "evacuate", "-h")
	require.Contains(t, res.stdout, "Usage:\n  droverctl evacuate [--wait] CELL_ID")
	require.Contains(t, res.stdout, "--timeout\nbounds the whole wait (default 15m)")

	// -f is shown as it is typed (issue 17), with its long form.
	for _, name := range []string{"desire", "task desire"} {
		res = run(t, env, append(strings.Fields(name), "-h")...)
		require.Contains(t, res.stdout, "-f, --file FILE")
		require.NotContains(t, res.stdout, "--f ")
	}
}

// TestCompletion: the shell scripts come from cobra and ask droverctl for the words
// to complete, so completing names the commands, the family verbs and the flags.
func TestCompletion(t *testing.T) {
	env := commands.Env{}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		res := run(t, env, "completion", shell)
		require.Equal(t, commands.ExitOK, res.code, "%s: %s", shell, res.stderr)
		require.Contains(t, res.stdout, "__complete", shell)
		require.Contains(t, res.stdout, "droverctl", shell)
	}

	res := run(t, env, "__complete", "")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	for _, name := range []string{"push", "desired-lrps", "actual-lrps", "task", "cell", "converger", "evacuate", "events"} {
		require.Contains(t, "\n"+res.stdout, "\n"+name+"\t", "completes %s", name)
	}
	res = run(t, env, "__complete", "cell", "")
	require.Contains(t, res.stdout, "cordon\t")
	require.Contains(t, res.stdout, "uncordon\t")
	res = run(t, env, "__complete", "desire", "--")
	require.Contains(t, res.stdout, "--file\t")
	require.Contains(t, res.stdout, "--bbs-address\t")

	res = run(t, env, "completion", "tcsh")
	require.Equal(t, commands.ExitUsage, res.code)
	require.Equal(t, "droverctl: unknown command \"completion tcsh\": completion takes bash, fish, powershell, zsh\n"+
		"Run 'droverctl completion -h' for usage.\n", res.stderr)
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "90", want: 90 * time.Second},
		{in: "0", want: 0},
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: " 5 ", want: 5 * time.Second},
		{in: "-1s", wantErr: "is negative"},
		{in: "-1", wantErr: "is negative"},
		{in: "", wantErr: "neither"},
		{in: "1.5", wantErr: "neither"},
		{in: "tomorrow", wantErr: "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := commands.ParseDuration(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTTLSeconds(t *testing.T) {
	tests := []struct {
		name    string
		in      time.Duration
		want    uint32
		wantErr string
	}{
		{name: "forever", in: 0, want: 0},
		{name: "minutes", in: 2 * time.Minute, want: 120},
		{name: "largest", in: 4294967295 * time.Second, want: 4294967295},
		{name: "too long", in: 4294967296 * time.Second, wantErr: "too long"},
		{name: "fraction", in: 1500 * time.Millisecond, wantErr: "whole number"},
		{name: "negative", in: -time.Second, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := commands.TTLSeconds(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
