package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor/rootfs"
)

func TestRunWritesTheImage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "busybox.tar")
	var stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"-busybox", "/usr/bin/busybox", "-o", out}, &stderr), stderr.String())

	var want bytes.Buffer
	require.NoError(t, rootfs.WriteBusyboxImage(&want, "/usr/bin/busybox", rootfs.DefaultBusyboxRef))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Bytes(), got), "the file holds the default-ref image")
}

func TestRunUsageAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{name: "no output", args: nil, code: exitUsage, msg: "usage: mkrootfs"},
		{name: "extra argument", args: []string{"-o", "x", "y"}, code: exitUsage, msg: "usage: mkrootfs"},
		{name: "unknown flag", args: []string{"-nope"}, code: exitUsage, msg: "flag provided but not defined"},
		{name: "missing busybox", args: []string{"-busybox", "/nonexistent/busybox", "-o", filepath.Join(t.TempDir(), "x.tar")}, code: exitFatal, msg: "mkrootfs: reading busybox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, tc.code, run(tc.args, &stderr))
			assert.Contains(t, stderr.String(), tc.msg)
		})
	}
}
