package steps

import (
	"encoding/json"
	"net"
	"strconv"

	"drover.dev/executor"
)

// portEnv is one entry of CF_INSTANCE_PORTS.
type portEnv struct {
	External         uint32 `json:"external,omitempty"`
	Internal         uint32 `json:"internal,omitempty"`
	ExternalTLSProxy uint32 `json:"external_tls_proxy,omitempty"`
	InternalTLSProxy uint32 `json:"internal_tls_proxy,omitempty"`
}

// NetworkEnv returns the networking vars every run step adds (cell.md §3.9):
// CF_INSTANCE_IP, CF_INSTANCE_INTERNAL_IP, CF_INSTANCE_PORT and CF_INSTANCE_ADDR (for the
// first port, empty without one) and CF_INSTANCE_PORTS (JSON list, "[]" without ports).
func NetworkEnv(n executor.NetInfo) []string {
	port, addr := "", ""
	if len(n.Ports) > 0 && n.Ports[0].HostPort > 0 {
		port = strconv.FormatUint(uint64(n.Ports[0].HostPort), 10)
		addr = net.JoinHostPort(n.ExternalIP, port)
	}
	ports := make([]portEnv, 0, len(n.Ports))
	for _, p := range n.Ports {
		ports = append(ports, portEnv{External: p.HostPort, Internal: p.ContainerPort})
	}
	portsJSON, _ := json.Marshal(ports) // a slice of plain structs always marshals
	return []string{
		"CF_INSTANCE_IP=" + n.ExternalIP,
		"CF_INSTANCE_INTERNAL_IP=" + n.InternalIP,
		"CF_INSTANCE_PORT=" + port,
		"CF_INSTANCE_ADDR=" + addr,
		"CF_INSTANCE_PORTS=" + string(portsJSON),
	}
}
