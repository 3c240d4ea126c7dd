package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Containerd is the private containerd a stack's cells use (scripts/containerd.sh).
type Containerd struct {
	Socket string `json:"socket"`
	// Own is true when the stack started it and stops it on Down.
	Own bool `json:"own"`
}

// StartContainerd starts the private containerd of home (home/containerd) unless it
// already answers, and returns it; Own says whether this call started it.
func StartContainerd(ctx context.Context, root, home string) (Containerd, error) {
	out, err := containerdScript(ctx, root, home, "socket")
	if err != nil {
		return Containerd{}, err
	}
	c := Containerd{Socket: strings.TrimSpace(out)}
	if c.Answers(ctx) == nil {
		return c, nil
	}
	if _, err := containerdScript(ctx, root, home, "start"); err != nil {
		return Containerd{}, err
	}
	c.Own = true
	return c, nil
}

// StopContainerd stops the private containerd of home; it is not an error if none runs.
func StopContainerd(ctx context.Context, root, home string) error {
	_, err := containerdScript(ctx, root, home, "stop")
	return err
}

// SharedContainerd returns the private containerd that scripts/containerd.sh runs for
// the repository (the one tests use), or an error saying how to start it.
func SharedContainerd(ctx context.Context, root string) (Containerd, error) {
	out, err := containerdScript(ctx, root, DefaultHome(root), "socket")
	if err != nil {
		return Containerd{}, err
	}
	c := Containerd{Socket: strings.TrimSpace(out)}
	if err := c.Answers(ctx); err != nil {
		return Containerd{}, fmt.Errorf("containerd does not answer on %s (start it with scripts/containerd.sh start): %w", c.Socket, err)
	}
	return c, nil
}

// Answers reports whether containerd answers on the socket.
func (c Containerd) Answers(ctx context.Context) error {
	if c.Socket == "" {
		return errors.New("no containerd socket")
	}
	if _, err := os.Stat(c.Socket); err != nil {
		return err
	}
	_, err := c.ctr(ctx, "", "version")
	return err
}

// ctr runs the ctr client against the socket, in namespace ns when it is not empty.
func (c Containerd) ctr(ctx context.Context, ns string, args ...string) (string, error) {
	full := []string{"--address", c.Socket}
	if ns != "" {
		full = append(full, "--namespace", ns)
	}
	cmd := exec.CommandContext(ctx, "ctr", append(full, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// list runs a "ctr ... ls -q" style command and returns its non-empty lines.
func (c Containerd) list(ctx context.Context, ns string, args ...string) ([]string, error) {
	out, err := c.ctr(ctx, ns, args...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	return ids, nil
}

// Namespaces lists the containerd namespaces.
func (c Containerd) Namespaces(ctx context.Context) ([]string, error) {
	return c.list(ctx, "", "namespaces", "ls", "-q")
}

// Leftovers lists what namespace ns still holds: "task ID", "container ID", "snapshot KEY".
// An unknown namespace holds nothing.
func (c Containerd) Leftovers(ctx context.Context, ns string) ([]string, error) {
	namespaces, err := c.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(namespaces, ns) {
		return nil, nil
	}
	var out []string
	for _, kind := range []struct{ name, list string }{{"task", "tasks"}, {"container", "containers"}} {
		ids, err := c.list(ctx, ns, kind.list, "ls", "-q")
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out = append(out, kind.name+" "+id)
		}
	}
	return out, nil
}

// PurgeNamespace kills and deletes every task, container, snapshot, image, lease and
// content blob of namespace ns, then the namespace itself. An unknown namespace is not
// an error.
func (c Containerd) PurgeNamespace(ctx context.Context, ns string) error {
	namespaces, err := c.Namespaces(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(namespaces, ns) {
		return nil
	}
	var errs []error
	tasks, err := c.list(ctx, ns, "tasks", "ls", "-q")
	errs = append(errs, err)
	for _, id := range tasks {
		_, err := c.ctr(ctx, ns, "tasks", "rm", "-f", id)
		errs = append(errs, err)
	}
	containers, err := c.list(ctx, ns, "containers", "ls", "-q")
	errs = append(errs, err)
	for _, id := range containers {
		_, err := c.ctr(ctx, ns, "containers", "rm", id)
		errs = append(errs, err)
	}
	errs = append(errs, c.removeAll(ctx, ns, []string{"snapshots", "ls"}, []string{"snapshots", "rm"}))
	for _, kind := range []string{"images", "leases", "content"} {
		errs = append(errs, c.removeAll(ctx, ns, []string{kind, "ls", "-q"}, []string{kind, "rm"}))
	}
	if _, err := c.ctr(ctx, "", "namespaces", "rm", ns); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeAll removes every listed item, repeating while that makes progress (snapshots
// must go children first).
func (c Containerd) removeAll(ctx context.Context, ns string, list, remove []string) error {
	var lastErr error
	for {
		ids, err := c.list(ctx, ns, list...)
		if err != nil {
			return err
		}
		if len(ids) > 0 && ids[0] == "KEY" { // the header of "snapshots ls"
			ids = ids[1:]
		}
		if len(ids) == 0 {
			return nil
		}
		removed := 0
		for _, id := range ids {
			if _, err := c.ctr(ctx, ns, append(remove, id)...); err != nil {
				lastErr = err
				continue
			}
			removed++
		}
		if removed == 0 {
			return lastErr
		}
	}
}

func containerdScript(ctx context.Context, root, home, verb string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "containerd.sh"), verb)
	cmd.Env = append(os.Environ(), "DROVER_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("containerd.sh %s: %w: %s", verb, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Images lists the image names of namespace ns.
func (c Containerd) Images(ctx context.Context, ns string) ([]string, error) {
	return c.list(ctx, ns, "images", "ls", "-q")
}

// Containers lists the container ids of namespace ns.
func (c Containerd) Containers(ctx context.Context, ns string) ([]string, error) {
	return c.list(ctx, ns, "containers", "ls", "-q")
}

// RunDetached starts container id from image in namespace ns running args, in the
// background, the way an operator would with `ctr run -d`: no drover label, no network.
func (c Containerd) RunDetached(ctx context.Context, ns, image, id string, args ...string) error {
	_, err := c.ctr(ctx, ns, append([]string{"run", "-d", image, id}, args...)...)
	return err
}
