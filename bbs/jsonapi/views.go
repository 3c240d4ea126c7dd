package jsonapi

import (
	"encoding/json"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Error is the body of every HTTP error: the models.ErrorType and a message.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ErrorView turns any error into its JSON body, recovering the BBS error type.
func ErrorView(err error) Error {
	e := models.FromError(err)
	if e == nil {
		return Error{Type: string(models.ErrTypeUnknown), Message: "no error"}
	}
	return Error{Type: string(e.Type), Message: e.Message}
}

// PortMapping maps a container port to the host port that reaches it.
type PortMapping struct {
	ContainerPort         uint32 `json:"container_port"`
	HostPort              uint32 `json:"host_port"`
	ContainerTLSProxyPort uint32 `json:"container_tls_proxy_port,omitempty"`
	HostTLSProxyPort      uint32 `json:"host_tls_proxy_port,omitempty"`
}

// ModificationTag orders updates of one record.
type ModificationTag struct {
	Epoch string `json:"epoch"`
	Index uint32 `json:"index"`
}

// ActualLRP is the seed's ActualLRPResponse, plus drover's crash, presence and
// routing details. Index, state, since, presence and routable always appear.
type ActualLRP struct {
	ProcessGUID      string            `json:"process_guid"`
	InstanceGUID     string            `json:"instance_guid,omitempty"`
	CellID           string            `json:"cell_id,omitempty"`
	Domain           string            `json:"domain"`
	Index            int32             `json:"index"`
	State            string            `json:"state"`
	Address          string            `json:"address,omitempty"`
	Ports            []PortMapping     `json:"ports,omitempty"`
	InstanceAddress  string            `json:"instance_address,omitempty"`
	PlacementError   string            `json:"placement_error,omitempty"`
	Since            int64             `json:"since"`
	CrashCount       int32             `json:"crash_count,omitempty"`
	CrashReason      string            `json:"crash_reason,omitempty"`
	Presence         string            `json:"presence"`
	Routable         bool              `json:"routable"`
	AvailabilityZone string            `json:"availability_zone,omitempty"`
	InternalRoutes   []string          `json:"internal_routes,omitempty"`
	MetricTags       map[string]string `json:"metric_tags,omitempty"`
	ModificationTag  *ModificationTag  `json:"modification_tag,omitempty"`
}

// ActualLRPView flattens an ActualLRP into the seed's shape. A nil ActualLRP gives
// the zero view.
func ActualLRPView(a *modelsv1.ActualLRP) ActualLRP {
	net := a.GetNetInfo()
	return ActualLRP{
		ProcessGUID:      a.GetProcessGuid(),
		InstanceGUID:     a.GetInstanceGuid(),
		CellID:           a.GetCellId(),
		Domain:           a.GetDomain(),
		Index:            a.GetIndex(),
		State:            models.StateName(a.GetState()),
		Address:          net.GetAddress(),
		Ports:            portMappingViews(net.GetPorts()),
		InstanceAddress:  net.GetInstanceAddress(),
		PlacementError:   a.GetPlacementError(),
		Since:            a.GetSince(),
		CrashCount:       a.GetCrashCount(),
		CrashReason:      a.GetCrashReason(),
		Presence:         models.PresenceName(a.GetPresence()),
		Routable:         a.GetRoutable(),
		AvailabilityZone: a.GetAvailabilityZone(),
		InternalRoutes:   a.GetInternalRoutes(),
		MetricTags:       a.GetMetricTags(),
		ModificationTag:  modificationTagView(a.GetModificationTag()),
	}
}

func portMappingViews(ports []*modelsv1.PortMapping) []PortMapping {
	if len(ports) == 0 {
		return nil
	}
	out := make([]PortMapping, 0, len(ports))
	for _, p := range ports {
		out = append(out, PortMapping{
			ContainerPort:         p.GetContainerPort(),
			HostPort:              p.GetHostPort(),
			ContainerTLSProxyPort: p.GetContainerTlsProxyPort(),
			HostTLSProxyPort:      p.GetHostTlsProxyPort(),
		})
	}
	return out
}

func modificationTagView(t *modelsv1.ModificationTag) *ModificationTag {
	if t == nil {
		return nil
	}
	return &ModificationTag{Epoch: t.GetEpoch(), Index: t.GetIndex()}
}

// Task is a task in JSON: its state by name, times as Unix nanoseconds, and its
// definition as protojson with proto field names.
type Task struct {
	TaskGUID         string          `json:"task_guid"`
	Domain           string          `json:"domain"`
	State            string          `json:"state"`
	CellID           string          `json:"cell_id,omitempty"`
	Result           string          `json:"result,omitempty"`
	Failed           bool            `json:"failed"`
	FailureReason    string          `json:"failure_reason,omitempty"`
	RejectionCount   int32           `json:"rejection_count,omitempty"`
	RejectionReason  string          `json:"rejection_reason,omitempty"`
	CreatedAt        int64           `json:"created_at"`
	UpdatedAt        int64           `json:"updated_at"`
	FirstCompletedAt int64           `json:"first_completed_at,omitempty"`
	TaskDefinition   json.RawMessage `json:"task_definition,omitempty"`
}

// TaskView converts a task; it fails only if the definition cannot be encoded.
func TaskView(t *modelsv1.Task) (Task, error) {
	view := Task{
		TaskGUID:         t.GetTaskGuid(),
		Domain:           t.GetDomain(),
		State:            models.TaskStateName(t.GetState()),
		CellID:           t.GetCellId(),
		Result:           t.GetResult(),
		Failed:           t.GetFailed(),
		FailureReason:    t.GetFailureReason(),
		RejectionCount:   t.GetRejectionCount(),
		RejectionReason:  t.GetRejectionReason(),
		CreatedAt:        t.GetCreatedAt(),
		UpdatedAt:        t.GetUpdatedAt(),
		FirstCompletedAt: t.GetFirstCompletedAt(),
	}
	if def := t.GetTaskDefinition(); def != nil {
		raw, err := marshalProto(def)
		if err != nil {
			return Task{}, err
		}
		view.TaskDefinition = raw
	}
	return view, nil
}

// CellCapacity is what a cell offers in total.
type CellCapacity struct {
	MemoryMB   int32 `json:"memory_mb"`
	DiskMB     int32 `json:"disk_mb"`
	Containers int32 `json:"containers"`
}

// RootFSProvider is a kind of rootfs a cell runs, with its properties (preloaded names).
type RootFSProvider struct {
	Name       string   `json:"name"`
	Properties []string `json:"properties,omitempty"`
}

// Cell is a live cell's presence in JSON; expires_at is Unix nanoseconds.
type Cell struct {
	CellID                string            `json:"cell_id"`
	RepAddress            string            `json:"rep_address"`
	RepURL                string            `json:"rep_url,omitempty"`
	Zone                  string            `json:"zone,omitempty"`
	Capacity              CellCapacity      `json:"capacity"`
	RootFSProviders       []RootFSProvider  `json:"rootfs_providers,omitempty"`
	PlacementTags         []string          `json:"placement_tags,omitempty"`
	OptionalPlacementTags []string          `json:"optional_placement_tags,omitempty"`
	Annotations           map[string]string `json:"annotations,omitempty"`
	ExpiresAt             int64             `json:"expires_at"`
	// Cordoned is set when an operator cordoned the cell: it takes no new work.
	Cordoned     bool   `json:"cordoned,omitempty"`
	CordonReason string `json:"cordon_reason,omitempty"`
}

// CellView converts a cell presence. A nil presence gives the zero view.
func CellView(c *modelsv1.CellPresence) Cell {
	capacity := c.GetCapacity()
	view := Cell{
		CellID:     c.GetCellId(),
		RepAddress: c.GetRepAddress(),
		RepURL:     c.GetRepUrl(),
		Zone:       c.GetZone(),
		Capacity: CellCapacity{
			MemoryMB:   capacity.GetMemoryMb(),
			DiskMB:     capacity.GetDiskMb(),
			Containers: capacity.GetContainers(),
		},
		PlacementTags:         c.GetPlacementTags(),
		OptionalPlacementTags: c.GetOptionalPlacementTags(),
		Annotations:           c.GetAnnotations(),
		ExpiresAt:             c.GetExpiresAt(),
		Cordoned:              c.GetCordoned(),
		CordonReason:          c.GetCordonReason(),
	}
	for _, p := range c.GetRootfsProviders() {
		view.RootFSProviders = append(view.RootFSProviders, RootFSProvider{Name: p.GetName(), Properties: p.GetProperties()})
	}
	return view
}
