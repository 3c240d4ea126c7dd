package containerd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"drover.dev/executor"
)

// containerMeta is what the runtime keeps about a container in its state dir.
type containerMeta struct {
	Guid      string           `json:"guid"`
	DiskMB    int              `json:"disk_mb"`
	CreatedAt time.Time        `json:"created_at"`
	NetInfo   executor.NetInfo `json:"net_info"`
	// UpperDir is the overlay upper dir of the container's snapshot (its own writes).
	UpperDir string `json:"upper_dir"`
	// DiskQuota is set when the filesystem enforces DiskMB (a btrfs qgroup): writes
	// beyond it fail, and the disk poll only measures.
	DiskQuota bool `json:"disk_quota,omitempty"`
	// Image is what processes take from the image's config.
	Image imageMeta `json:"image"`
	// UserNS is the container's id mapping when it runs in a user namespace (kept
	// with the container: a change of the cell's setting does not change it).
	UserNS *idMap `json:"user_ns,omitempty"`
}

// processMeta is what the runtime keeps about one exec'd process.
type processMeta struct {
	ID string `json:"id"`
	// OOMKillsAtStart is the container's OOM kill count when the process started; a
	// higher count when it exits means the memory limit killed it.
	OOMKillsAtStart uint64 `json:"oom_kills_at_start"`
}

// stateDir lays out the files under Config.StateDir.
type stateDir string

func (d stateDir) container(guid string) string {
	return filepath.Join(string(d), "containers", guid)
}
func (d stateDir) containerMeta(guid string) string {
	return filepath.Join(d.container(guid), "meta.json")
}
func (d stateDir) engineState(guid string) string { return filepath.Join(d.container(guid), "state") }
func (d stateDir) hosts(guid string) string       { return filepath.Join(d.container(guid), "hosts") }
func (d stateDir) resolvConf(guid string) string {
	return filepath.Join(d.container(guid), "resolv.conf")
}
func (d stateDir) process(guid, id string) string {
	return filepath.Join(d.container(guid), "processes", id)
}
func (d stateDir) processMeta(guid, id string) string {
	return filepath.Join(d.process(guid, id), "meta.json")
}
func (d stateDir) stdout(guid, id string) string {
	return filepath.Join(d.process(guid, id), "stdout.log")
}
func (d stateDir) stderr(guid, id string) string {
	return filepath.Join(d.process(guid, id), "stderr.log")
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// readContainerMeta returns the meta of guid; ok is false when there is none.
func (d stateDir) readContainerMeta(guid string) (containerMeta, bool, error) {
	var m containerMeta
	err := readJSON(d.containerMeta(guid), &m)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	return m, err == nil, err
}
