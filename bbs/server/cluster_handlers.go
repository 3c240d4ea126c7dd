package server

import (
	"context"
	"slices"
	"time"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// seconds turns a TTL in seconds into a duration.
func seconds(ttl uint32) time.Duration {
	return time.Duration(ttl) * time.Second
}

// domainService implements bbsv1.DomainServiceServer.
type domainService struct {
	bbsv1.UnimplementedDomainServiceServer
	*Server
}

// UpsertDomain marks a domain fresh for ttl_seconds; 0 means forever.
func (s *domainService) UpsertDomain(ctx context.Context, req *bbsv1.UpsertDomainRequest) (*bbsv1.UpsertDomainResponse, error) {
	if err := s.dbFor(ctx).UpsertDomain(ctx, req.GetDomain(), seconds(req.GetTtlSeconds())); err != nil {
		return nil, err
	}
	return &bbsv1.UpsertDomainResponse{}, nil
}

// ListDomains lists the fresh domains, sorted.
func (s *domainService) ListDomains(ctx context.Context, _ *bbsv1.ListDomainsRequest) (*bbsv1.ListDomainsResponse, error) {
	domains, err := s.dbFor(ctx).ListFreshDomains(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(domains)
	return &bbsv1.ListDomainsResponse{Domains: domains}, nil
}

// cellService implements bbsv1.CellServiceServer.
type cellService struct {
	bbsv1.UnimplementedCellServiceServer
	*Server
}

// HeartbeatCell creates or renews a cell's presence for ttl_seconds.
func (s *cellService) HeartbeatCell(ctx context.Context, req *bbsv1.HeartbeatCellRequest) (*bbsv1.HeartbeatCellResponse, error) {
	if err := s.dbFor(ctx).HeartbeatCell(ctx, req.GetCellPresence(), seconds(req.GetTtlSeconds())); err != nil {
		return nil, err
	}
	return &bbsv1.HeartbeatCellResponse{}, nil
}

// RemoveCell deletes a cell's presence.
func (s *cellService) RemoveCell(ctx context.Context, req *bbsv1.RemoveCellRequest) (*bbsv1.RemoveCellResponse, error) {
	if err := s.dbFor(ctx).RemoveCell(ctx, req.GetCellId()); err != nil {
		return nil, err
	}
	return &bbsv1.RemoveCellResponse{}, nil
}

// ListCells lists live cells.
func (s *cellService) ListCells(ctx context.Context, _ *bbsv1.ListCellsRequest) (*bbsv1.ListCellsResponse, error) {
	cells, err := s.dbFor(ctx).ListLiveCells(ctx)
	if err != nil {
		return nil, err
	}
	return &bbsv1.ListCellsResponse{Cells: cells}, nil
}

// lockService implements bbsv1.LockServiceServer.
type lockService struct {
	bbsv1.UnimplementedLockServiceServer
	*Server
}

// AcquireLock takes or renews a lock.
func (s *lockService) AcquireLock(ctx context.Context, req *bbsv1.AcquireLockRequest) (*bbsv1.AcquireLockResponse, error) {
	lock, err := s.dbFor(ctx).AcquireLock(ctx, req.GetKey(), req.GetOwner(), req.GetValue(), seconds(req.GetTtlSeconds()))
	if err != nil {
		return nil, err
	}
	return &bbsv1.AcquireLockResponse{Lock: lock}, nil
}

// ReleaseLock gives up a lock the owner holds.
func (s *lockService) ReleaseLock(ctx context.Context, req *bbsv1.ReleaseLockRequest) (*bbsv1.ReleaseLockResponse, error) {
	if err := s.dbFor(ctx).ReleaseLock(ctx, req.GetKey(), req.GetOwner()); err != nil {
		return nil, err
	}
	return &bbsv1.ReleaseLockResponse{}, nil
}

// FetchLock shows who holds a lock.
func (s *lockService) FetchLock(ctx context.Context, req *bbsv1.FetchLockRequest) (*bbsv1.FetchLockResponse, error) {
	lock, err := s.dbFor(ctx).FetchLock(ctx, req.GetKey())
	if err != nil {
		return nil, err
	}
	return &bbsv1.FetchLockResponse{Lock: lock}, nil
}

// ListLocks lists held locks.
func (s *lockService) ListLocks(ctx context.Context, _ *bbsv1.ListLocksRequest) (*bbsv1.ListLocksResponse, error) {
	locks, err := s.dbFor(ctx).ListLocks(ctx)
	if err != nil {
		return nil, err
	}
	return &bbsv1.ListLocksResponse{Locks: locks}, nil
}
