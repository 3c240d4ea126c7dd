package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/integration/bench"
)

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, bench.Settings{
		LRPs: 10000, Actuals: 100000, InstancesPerLRP: 100, Claims: 2000,
		Concurrency: 16, ListRuns: 5, MaxConns: bench.DefaultMaxConns,
	}, o.cfg.Settings)
	require.Equal(t, []string{"desire", "list", "claim"}, o.cfg.Scenarios)
	require.Equal(t, bench.DefaultAdminURL(), o.adminURL)
	require.Equal(t, slog.LevelWarn, o.logLevel)
	require.False(t, o.jsonOut)
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, o *options)
		wantErr string
	}{
		{"sizes and json", []string{"-lrps", "5", "-actuals", "50", "-list-running", "10", "-json"}, func(t *testing.T, o *options) {
			require.Equal(t, 5, o.cfg.LRPs)
			require.Equal(t, 50, o.cfg.Actuals)
			require.Equal(t, 10, o.cfg.ListRunning)
			require.True(t, o.jsonOut)
		}, ""},
		{"scenarios trimmed", []string{"-scenarios", " list , claim,"}, func(t *testing.T, o *options) {
			require.Equal(t, []string{"list", "claim"}, o.cfg.Scenarios)
		}, ""},
		{"log level", []string{"-log-level", "debug"}, func(t *testing.T, o *options) {
			require.Equal(t, slog.LevelDebug, o.logLevel)
		}, ""},
		{"unknown scenario", []string{"-scenarios", "list,boot"}, nil, `unknown scenario "boot"`},
		{"no scenario", []string{"-scenarios", ","}, nil, "names none"},
		{"zero concurrency", []string{"-concurrency", "0"}, nil, "concurrency"},
		{"stray argument", []string{"extra"}, nil, "unexpected arguments"},
		{"unknown flag", []string{"-nope"}, nil, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}
