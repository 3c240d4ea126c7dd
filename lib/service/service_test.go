package service

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
)

type testConfig struct{ Level string }

// testProcess runs one member that is ready at once and returns err when signalled
// (or at once, when exitAtOnce).
type testProcess struct {
	err        error
	exitAtOnce bool
	closed     bool
}

func (p *testProcess) Members() ifrit.Runner {
	return ifrit.RunFunc(func(signals <-chan os.Signal, ready chan<- struct{}) error {
		if p.exitAtOnce {
			return p.err
		}
		close(ready)
		return p.err // the group is signalled by sigmon only; tests stop by exiting
	})
}
func (p *testProcess) StartedAttrs() []any { return []any{"answer", 42} }
func (p *testProcess) Close()              { p.closed = true }

func spec(p *testProcess, loadErr error) Spec[testConfig] {
	return Spec[testConfig]{
		Name:            "thing",
		DefaultLogLevel: "info",
		Load: func(path string) (testConfig, error) {
			if loadErr != nil {
				return testConfig{}, loadErr
			}
			return testConfig{Level: "debug"}, nil
		},
		LogLevel: func(c testConfig) string { return c.Level },
		LogAttrs: func(testConfig) []any { return []any{"cell_id", "cell-9"} },
		New: func(testConfig, *slog.Logger, *slog.LevelVar) (Process, error) {
			if p == nil {
				return nil, errors.New("no database")
			}
			return p, nil
		},
	}
}

func TestRunExitCodesAndLogs(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(cfgFile, []byte("{}"), 0o600))
	for _, tc := range []struct {
		name    string
		args    []string
		proc    *testProcess
		loadErr error
		code    int
		logs    []string
	}{
		{"bad flag", []string{"-nope"}, &testProcess{}, nil, ExitUsage, nil},
		{"no config flag", nil, &testProcess{}, nil, ExitUsage, []string{`"msg":"missing-config-flag"`, `thing -config FILE`}},
		{"invalid config", []string{"-config", cfgFile}, &testProcess{}, errors.New("cell_id: is required"), ExitFatal, []string{`"msg":"invalid-config"`, `cell_id: is required`}},
		{"build fails", []string{"-config", cfgFile}, nil, nil, ExitFatal, []string{`"msg":"failed-to-initialize"`, `no database`}},
		{"member fails before ready", []string{"-config", cfgFile}, &testProcess{exitAtOnce: true, err: errors.New("port taken")}, nil, ExitFatal, []string{`"msg":"thing-failed-to-start"`, `port taken`}},
		{"member fails after ready", []string{"-config", cfgFile}, &testProcess{err: errors.New("lock lost")}, nil, ExitFatal, []string{`"msg":"thing-started"`, `"answer":42`, `"cell_id":"cell-9"`, `"msg":"thing-exited-with-failure"`, `lock lost`}},
		{"clean exit", []string{"-config", cfgFile}, &testProcess{}, nil, ExitOK, []string{`"msg":"thing-starting"`, `"msg":"thing-exited"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(spec(tc.proc, tc.loadErr), tc.args, &stdout, &stderr)
			require.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			for _, want := range tc.logs {
				require.True(t, strings.Contains(stdout.String(), want), "want %s in:\n%s", want, stdout.String())
			}
			if tc.proc != nil && tc.code != ExitUsage && tc.loadErr == nil {
				require.True(t, tc.proc.closed, "Close was not called")
			}
		})
	}
}
