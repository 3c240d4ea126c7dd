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
	"time"

	executorcontainerd "drover.dev/executor/containerd"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
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
	return c.with(ctx, "", func(ctx context.Context, client *containerd.Client) error {
		_, err := client.Version(ctx)
		return err
	})
}

// with calls fn with a client of the socket and ctx in namespace ns (when not empty).
func (c Containerd) with(ctx context.Context, ns string, fn func(context.Context, *containerd.Client) error) error {
	client, err := containerd.New(c.Socket, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connect to containerd at %s: %w", c.Socket, err)
	}
	defer client.Close()
	if ns != "" {
		ctx = namespaces.WithNamespace(ctx, ns)
	}
	return fn(ctx, client)
}

// Namespaces lists the containerd namespaces.
func (c Containerd) Namespaces(ctx context.Context) ([]string, error) {
	var out []string
	err := c.with(ctx, "", func(ctx context.Context, client *containerd.Client) (err error) {
		out, err = client.NamespaceService().List(ctx)
		return err
	})
	return out, err
}

// Leftovers lists what namespace ns still holds: "task ID", "container ID". An unknown
// namespace holds nothing.
func (c Containerd) Leftovers(ctx context.Context, ns string) ([]string, error) {
	known, err := c.Namespaces(ctx)
	if err != nil || !slices.Contains(known, ns) {
		return nil, err
	}
	var out []string
	err = c.with(ctx, ns, func(ctx context.Context, client *containerd.Client) error {
		resp, err := client.TaskService().List(ctx, &tasks.ListTasksRequest{})
		if err != nil {
			return fmt.Errorf("list tasks in %s: %w", ns, err)
		}
		for _, t := range resp.GetTasks() {
			out = append(out, "task "+t.GetID())
		}
		ctrs, err := client.Containers(ctx)
		if err != nil {
			return fmt.Errorf("list containers in %s: %w", ns, err)
		}
		for _, ctr := range ctrs {
			out = append(out, "container "+ctr.ID())
		}
		return nil
	})
	return out, err
}

// PurgeNamespace removes everything namespace ns holds, then the namespace (see the
// executor's PurgeNamespace). An unknown namespace is not an error.
func (c Containerd) PurgeNamespace(ctx context.Context, ns string) error {
	return executorcontainerd.PurgeNamespace(ctx, c.Socket, ns)
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
	var out []string
	err := c.with(ctx, ns, func(ctx context.Context, client *containerd.Client) error {
		imgs, err := client.ImageService().List(ctx)
		for _, img := range imgs {
			out = append(out, img.Name)
		}
		return err
	})
	return out, err
}

// Containers lists the container ids of namespace ns.
func (c Containerd) Containers(ctx context.Context, ns string) ([]string, error) {
	var out []string
	err := c.with(ctx, ns, func(ctx context.Context, client *containerd.Client) error {
		ctrs, err := client.Containers(ctx)
		for _, ctr := range ctrs {
			out = append(out, ctr.ID())
		}
		return err
	})
	return out, err
}

// RunDetached starts container id from image in namespace ns running args in the
// background, the way an operator would with `ctr run -d`: the image's config, a
// snapshot of its own, a network namespace of its own, no drover label, no output. When
// it cannot start the task it removes the container again.
func (c Containerd) RunDetached(ctx context.Context, ns, image, id string, args ...string) error {
	return c.with(ctx, ns, func(ctx context.Context, client *containerd.Client) error {
		img, err := client.GetImage(ctx, image)
		if err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		ctr, err := client.NewContainer(ctx, id,
			containerd.WithSnapshotter(executorcontainerd.DefaultSnapshotter),
			containerd.WithNewSnapshot(id, img),
			containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs(args...)))
		if err != nil {
			return fmt.Errorf("run %s: create container: %w", id, err)
		}
		task, err := ctr.NewTask(ctx, cio.NullIO)
		if err == nil {
			if err = task.Start(ctx); err != nil {
				_, _ = task.Delete(ctx, containerd.WithProcessKill)
			}
		}
		if err != nil {
			_ = ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
			return fmt.Errorf("run %s: start task: %w", id, err)
		}
		return nil
	})
}
