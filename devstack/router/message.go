package router

import "encoding/json"

// The NATS subjects of gorouter's protocol (routing.md §1.1).
const (
	SubjectGreet      = "router.greet"
	SubjectStart      = "router.start"
	SubjectRegister   = "router.register"
	SubjectUnregister = "router.unregister"
)

// RegistryMessage is the JSON of router.register and router.unregister, field for field
// as gorouter's mbus subscriber reads it.
type RegistryMessage struct {
	Host                    string            `json:"host"`
	Port                    uint32            `json:"port"`
	TLSPort                 uint32            `json:"tls_port,omitempty"`
	URIs                    []string          `json:"uris"`
	Protocol                string            `json:"protocol,omitempty"`
	App                     string            `json:"app,omitempty"`
	RouteServiceURL         string            `json:"route_service_url,omitempty"`
	PrivateInstanceID       string            `json:"private_instance_id,omitempty"`
	PrivateInstanceIndex    string            `json:"private_instance_index,omitempty"`
	ServerCertDomainSAN     string            `json:"server_cert_domain_san,omitempty"`
	IsolationSegment        string            `json:"isolation_segment,omitempty"`
	EndpointUpdatedAtNs     int64             `json:"endpoint_updated_at_ns,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
	AvailabilityZone        string            `json:"availability_zone,omitempty"`
	Options                 json.RawMessage   `json:"options,omitempty"`
	StaleThresholdInSeconds int               `json:"stale_threshold_in_seconds,omitempty"`
}

// StartMessage is the JSON of router.start and of the reply to router.greet.
type StartMessage struct {
	ID                               string   `json:"id"`
	Hosts                            []string `json:"hosts"`
	MinimumRegisterIntervalInSeconds int      `json:"minimumRegisterIntervalInSeconds"`
	PruneThresholdInSeconds          int      `json:"pruneThresholdInSeconds"`
}
