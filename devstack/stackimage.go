package devstack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"drover.dev/executor/rootfs"
)

// StackImageRef is the image name of a stack's preloaded image.
func StackImageRef(name string) string { return "drover.local/rootfs/" + name + ":latest" }

// EnsureStackImage builds the stack's root filesystem with scripts/stack.sh (cached under
// .drover/cache/stacks, or $DROVER_STACK_CACHE) and turns it into an OCI image tarball
// beside it, once; it returns the image's path. Concurrent callers (test stacks) share
// one build and one image through file locks.
func EnsureStackImage(ctx context.Context, root, name string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "stack.sh"), "build", name)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/stack.sh build %s: %w\n%s", name, err, lastLines(stderr.String(), 20))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	tarPath := strings.TrimSpace(lines[len(lines)-1])
	if !filepath.IsAbs(tarPath) {
		return "", fmt.Errorf("scripts/stack.sh build %s printed %q, not the path of its tar", name, tarPath)
	}
	image := strings.TrimSuffix(tarPath, ".tar") + ".oci.tar"
	unlock, err := lockFile(image + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := rootfs.EnsureTarImage(image, tarPath, StackImageRef(name)); err != nil {
		return "", err
	}
	return image, nil
}

// lockFile takes an exclusive flock on path (created), released by the returned func.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// parseResolvers returns the IPv4 nameserver addresses of a resolv.conf.
func parseResolvers(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(fields[1]); err == nil && a.Is4() && !a.IsLoopback() {
			out = append(out, a.String())
		}
	}
	return out
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
