package auction

import (
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// CellFromState builds the scheduler's view of a cell from its rep's State answer; the
// cell id and zone come from the answer, the index from the caller.
func CellFromState(state *repv1.StateResponse, index int) CellState {
	c := CellState{
		CellID:                 state.GetCellId(),
		Zone:                   state.GetZone(),
		Index:                  index,
		Available:              resourcesFromCapacity(state.GetAvailableResources()),
		Total:                  resourcesFromCapacity(state.GetTotalResources()),
		PlacementTags:          state.GetPlacementTags(),
		OptionalPlacementTags:  state.GetOptionalPlacementTags(),
		VolumeDrivers:          state.GetVolumeDrivers(),
		StartingContainerCount: int(state.GetStartCount()),
	}
	for _, p := range state.GetRootfsProviders() {
		c.RootFSProviders = append(c.RootFSProviders, RootFSProvider{Name: p.GetName(), Properties: p.GetProperties()})
	}
	c.LRPs = make([]Instance, 0, len(state.GetLrps()))
	for _, lrp := range state.GetLrps() {
		c.LRPs = append(c.LRPs, Instance{ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex()})
	}
	c.Tasks = make([]string, 0, len(state.GetTasks()))
	for _, task := range state.GetTasks() {
		c.Tasks = append(c.Tasks, task.GetTaskGuid())
	}
	return c
}

// CellFromPresence builds the view of a cordoned cell from its presence alone (the
// auctioneer does not ask a cordoned cell's rep for its state): enough for Place to name
// it when it is the only compatible cell. Presences carry no volume drivers.
func CellFromPresence(p *modelsv1.CellPresence, index int) CellState {
	c := CellState{
		CellID:                p.GetCellId(),
		Zone:                  p.GetZone(),
		Index:                 index,
		Total:                 resourcesFromCapacity(p.GetCapacity()),
		PlacementTags:         p.GetPlacementTags(),
		OptionalPlacementTags: p.GetOptionalPlacementTags(),
		Cordoned:              p.GetCordoned(),
		CordonReason:          p.GetCordonReason(),
	}
	for _, rp := range p.GetRootfsProviders() {
		c.RootFSProviders = append(c.RootFSProviders, RootFSProvider{Name: rp.GetName(), Properties: rp.GetProperties()})
	}
	return c
}

func resourcesFromCapacity(c *modelsv1.CellCapacity) Resources {
	return Resources{MemoryMB: int(c.GetMemoryMb()), DiskMB: int(c.GetDiskMb()), Containers: int(c.GetContainers())}
}

func resourceFromProto(r *modelsv1.Resource) Resource {
	return Resource{MemoryMB: int(r.GetMemoryMb()), DiskMB: int(r.GetDiskMb()), MaxPids: int(r.GetMaxPids())}
}

func (r Resource) toProto() *modelsv1.Resource {
	return &modelsv1.Resource{MemoryMb: int32(r.MemoryMB), DiskMb: int32(r.DiskMB), MaxPids: int32(r.MaxPids)}
}

// LRPAuctionsFromRequest expands a start request into one auction per index.
func LRPAuctionsFromRequest(req *modelsv1.LRPStartRequest, queuedAt time.Time) []LRPAuction {
	auctions := make([]LRPAuction, 0, len(req.GetIndices()))
	for _, index := range req.GetIndices() {
		auctions = append(auctions, LRPAuction{
			ProcessGuid: req.GetProcessGuid(),
			Index:       index,
			Domain:      req.GetDomain(),
			Resource:    resourceFromProto(req.GetResource()),
			Constraint: Constraint{
				RootFS:        req.GetRootfs(),
				PlacementTags: req.GetPlacementTags(),
				VolumeDrivers: req.GetVolumeDrivers(),
			},
			QueuedAt: queuedAt,
		})
	}
	return auctions
}

// TaskAuctionFromRequest converts a task start request.
func TaskAuctionFromRequest(req *modelsv1.TaskStartRequest, queuedAt time.Time) TaskAuction {
	return TaskAuction{
		TaskGuid: req.GetTaskGuid(),
		Domain:   req.GetDomain(),
		Resource: resourceFromProto(req.GetResource()),
		Constraint: Constraint{
			RootFS:        req.GetRootfs(),
			PlacementTags: req.GetPlacementTags(),
			VolumeDrivers: req.GetVolumeDrivers(),
		},
		QueuedAt: queuedAt,
	}
}

// PerformRequest is the rep request carrying the work placed on one cell.
func (w CellWork) PerformRequest() *repv1.PerformRequest {
	req := &repv1.PerformRequest{CellId: w.CellID}
	for _, lrp := range w.LRPs {
		req.Lrps = append(req.Lrps, &repv1.LRPWork{
			ProcessGuid:   lrp.ProcessGuid,
			Index:         lrp.Index,
			Domain:        lrp.Domain,
			Resource:      lrp.Resource.toProto(),
			Rootfs:        lrp.Constraint.RootFS,
			PlacementTags: lrp.Constraint.PlacementTags,
		})
	}
	for _, task := range w.Tasks {
		req.Tasks = append(req.Tasks, &repv1.TaskWork{
			TaskGuid:      task.TaskGuid,
			Domain:        task.Domain,
			Resource:      task.Resource.toProto(),
			Rootfs:        task.Constraint.RootFS,
			PlacementTags: task.Constraint.PlacementTags,
		})
	}
	return req
}
