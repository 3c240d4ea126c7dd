package output

import (
	"strconv"
	"strings"
	"time"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// DomainTable lists fresh domains.
func DomainTable(domains []string) *Table {
	t := NewTable("DOMAIN")
	for _, d := range domains {
		t.Add(d)
	}
	return t
}

// TaskTable lists tasks with their state and outcome.
func TaskTable(tasks []*modelsv1.Task, now time.Time) *Table {
	t := NewTable("TASK_GUID", "DOMAIN", "STATE", "CELL", "FAILED", "FAILURE_REASON", "UPDATED")
	for _, task := range tasks {
		t.Add(
			task.GetTaskGuid(),
			task.GetDomain(),
			models.TaskStateName(task.GetState()),
			task.GetCellId(),
			strconv.FormatBool(task.GetFailed()),
			task.GetFailureReason(),
			Age(task.GetUpdatedAt(), now),
		)
	}
	return t
}

// CellTable lists live cells with their capacity, what they can run and whether an
// operator cordoned them, and why.
func CellTable(cells []*modelsv1.CellPresence, now time.Time) *Table {
	t := NewTable("CELL_ID", "ZONE", "REP_ADDRESS", "MEMORY_MB", "DISK_MB", "CONTAINERS", "ROOTFS", "PLACEMENT_TAGS", "CORDONED", "EXPIRES", "CORDON_REASON")
	for _, c := range cells {
		t.Add(
			c.GetCellId(),
			c.GetZone(),
			c.GetRepAddress(),
			Int(c.GetCapacity().GetMemoryMb()),
			Int(c.GetCapacity().GetDiskMb()),
			Int(c.GetCapacity().GetContainers()),
			RootFSProviders(c.GetRootfsProviders()),
			placementTags(c),
			YesNo(c.GetCordoned()),
			Remaining(c.GetExpiresAt(), now),
			c.GetCordonReason(),
		)
	}
	return t
}

// RootFSProviders renders providers as rootfs URIs ("preloaded:cflinuxfs4,docker").
func RootFSProviders(providers []*modelsv1.RootFSProvider) string {
	var parts []string
	for _, p := range providers {
		if len(p.GetProperties()) == 0 {
			parts = append(parts, p.GetName())
			continue
		}
		for _, prop := range p.GetProperties() {
			parts = append(parts, p.GetName()+":"+prop)
		}
	}
	return strings.Join(parts, ",")
}

// placementTags lists required tags, then optional ones marked with "?".
func placementTags(c *modelsv1.CellPresence) string {
	tags := append([]string(nil), c.GetPlacementTags()...)
	for _, tag := range c.GetOptionalPlacementTags() {
		tags = append(tags, tag+"?")
	}
	return strings.Join(tags, ",")
}

// Cell is the JSON view of a live cell: the LRP API's view plus its cordon.
type Cell struct {
	jsonapi.Cell
	Cordoned     bool   `json:"cordoned"`
	CordonReason string `json:"cordon_reason,omitempty"`
}

// CellView converts a cell presence for JSON output.
func CellView(c *modelsv1.CellPresence) Cell {
	return Cell{Cell: jsonapi.CellView(c), Cordoned: c.GetCordoned(), CordonReason: c.GetCordonReason()}
}

// LockTable lists held locks.
func LockTable(locks []*modelsv1.Lock, now time.Time) *Table {
	t := NewTable("KEY", "OWNER", "VALUE", "EXPIRES")
	for _, l := range locks {
		t.Add(l.GetKey(), l.GetOwner(), l.GetValue(), Remaining(l.GetExpiresAt(), now))
	}
	return t
}

// Lock is the JSON view of a lock, with its expiry in RFC 3339.
type Lock struct {
	Key           string `json:"key"`
	Owner         string `json:"owner"`
	Value         string `json:"value,omitempty"`
	ExpiresAt     string `json:"expires_at,omitempty"`
	ModifiedIndex int64  `json:"modified_index"`
}

// LockView converts a lock for JSON output.
func LockView(l *modelsv1.Lock) Lock {
	return Lock{
		Key: l.GetKey(), Owner: l.GetOwner(), Value: l.GetValue(),
		ExpiresAt: timestampNano(l.GetExpiresAt()), ModifiedIndex: l.GetModifiedIndex(),
	}
}

// Domain is the JSON view of a fresh domain.
type Domain struct {
	Domain string `json:"domain"`
}

// DomainView converts a domain name for JSON output.
func DomainView(name string) Domain { return Domain{Domain: name} }
