// Package auction is the auctioneer's pure placement core: Place filters and scores cells
// for a batch of LRP instances and tasks exactly as upstream Diego's auction scheduler does
// (reference/cell.md §1.5–1.8), without any I/O.
package auction

import "time"

// Resources is an amount of cell capacity.
type Resources struct {
	MemoryMB   int
	DiskMB     int
	Containers int
}

// Resource is what one instance or task asks for. MaxPids is carried but never scored.
type Resource struct {
	MemoryMB int
	DiskMB   int
	MaxPids  int
}

// Constraint is where a piece of work may run.
type Constraint struct {
	RootFS        string
	PlacementTags []string
	VolumeDrivers []string
}

// LRPAuction is one LRP instance (one index) to place.
type LRPAuction struct {
	ProcessGuid string
	Index       int32
	Domain      string
	Resource    Resource
	Constraint  Constraint
	// QueuedAt is when the request arrived (carried through, not used by Place).
	QueuedAt time.Time
}

// Key names the instance: "process_guid.index".
func (a LRPAuction) Key() LRPKey { return LRPKey{ProcessGuid: a.ProcessGuid, Index: a.Index} }

// LRPKey identifies one instance of an LRP.
type LRPKey struct {
	ProcessGuid string
	Index       int32
}

// TaskAuction is one task to place.
type TaskAuction struct {
	TaskGuid   string
	Domain     string
	Resource   Resource
	Constraint Constraint
	// QueuedAt is when the request arrived (carried through, not used by Place).
	QueuedAt time.Time
}

// RootFSProvider is a rootfs scheme a cell runs. With Properties it is a fixed set
// (preloaded:NAME must name one of them); without, any URL of the scheme matches.
type RootFSProvider struct {
	Name       string
	Properties []string
}

// Instance is one LRP instance a cell already holds.
type Instance struct {
	ProcessGuid string
	Index       int32
}

// CellState is one cell as the scheduler sees it: built from the rep's State answer plus
// the cell id, zone and index.
type CellState struct {
	CellID string
	Zone   string
	// Index orders cells for bin-pack-first-fit (normalised per zone by Place).
	Index                 int
	Available             Resources
	Total                 Resources
	RootFSProviders       []RootFSProvider
	PlacementTags         []string
	OptionalPlacementTags []string
	VolumeDrivers         []string
	// StartingContainerCount counts containers reserved, initializing or created.
	StartingContainerCount int
	LRPs                   []Instance
	// Tasks are the guids of the tasks the cell holds.
	Tasks []string
	// Cordoned cells take no work; Place only names them (with CordonReason) in the
	// placement error of work that no other compatible cell could take.
	Cordoned     bool
	CordonReason string
}

// Options tune the scoring (reference/cell.md §1.6 and §1.9).
type Options struct {
	// StartingContainerWeight is added per starting container to a cell's score (0.25 upstream).
	StartingContainerWeight float64
	// BinPackFirstFitWeight > 0 fills low-index cells first.
	BinPackFirstFitWeight float64
	// StartingContainerCountMaximum > 0 caps the containers starting at once.
	StartingContainerCountMaximum int
}

// CellWork is the work placed on one cell, to send to its rep.
type CellWork struct {
	CellID string
	LRPs   []LRPAuction
	Tasks  []TaskAuction
}

// FailedLRP is an instance that could not be placed and why.
type FailedLRP struct {
	LRPAuction
	PlacementError string
}

// FailedTask is a task that could not be placed and why.
type FailedTask struct {
	TaskAuction
	PlacementError string
}

// Result is the outcome of one Place call.
type Result struct {
	// Work lists the cells that received work, in the order of the cells given to Place.
	Work        []CellWork
	FailedLRPs  []FailedLRP
	FailedTasks []FailedTask
}
