package network

import (
	"encoding/json"
	"path/filepath"
	"regexp"

	"drover.dev/executor"
)

// cniVersion is the CNI spec version the conflist declares (Debian's plugins 1.1 support it).
const cniVersion = "1.0.0"

// containerIfName is the container's interface the bridge plugin creates.
const containerIfName = "eth0"

// validID is what CNI accepts as a container ID and network name; guids must match it too.
var validID = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// networkName is the CNI network name of a cell: keyed by its bridge so that per-container
// iptables chains (hashed from network name and container ID) never collide across cells.
func networkName(bridge string) string {
	return "drover-" + bridge
}

// Directories under Config.StateDir.
func netnsDir(stateDir string) string    { return filepath.Join(stateDir, "netns") }
func ipamDir(stateDir string) string     { return filepath.Join(stateDir, "ipam") }
func cniCacheDir(stateDir string) string { return filepath.Join(stateDir, "cni-cache") }
func recordsDir(stateDir string) string  { return filepath.Join(stateDir, "records") }

// portMapEntry is one element of the portmap plugin's portMappings runtime config.
type portMapEntry struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// conflistJSON renders the cell's CNI network: a bridge (gateway, masquerade, hairpin so a
// container reaches itself through its host port) with host-local IPAM kept under the state
// dir, then portmap with SNAT so host ports work from the host itself, also on 127.0.0.1.
func conflistJSON(cfg Config) ([]byte, error) {
	type obj = map[string]any
	list := obj{
		"cniVersion": cniVersion,
		"name":       networkName(cfg.BridgeName),
		"plugins": []obj{
			{
				"type":        "bridge",
				"bridge":      cfg.BridgeName,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": obj{
					"type":    "host-local",
					"ranges":  [][]obj{{{"subnet": cfg.Subnet}}},
					"routes":  []obj{{"dst": "0.0.0.0/0"}},
					"dataDir": ipamDir(cfg.StateDir),
				},
			},
			{
				"type":         "portmap",
				"capabilities": obj{"portMappings": true},
				"snat":         true,
			},
		},
	}
	return json.Marshal(list)
}

// portMapArgs is the portMappings capability argument for the given mappings bound at hostIP.
func portMapArgs(hostIP string, ports []executor.PortMapping) []portMapEntry {
	out := make([]portMapEntry, 0, len(ports))
	for _, p := range ports {
		out = append(out, portMapEntry{
			HostPort:      int(p.HostPort),
			ContainerPort: int(p.ContainerPort),
			Protocol:      "tcp",
			HostIP:        hostIP,
		})
	}
	return out
}
