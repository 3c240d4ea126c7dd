package server

import (
	"context"
	"crypto/x509"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// CellAuthorizer decides what a caller whose certificate names a cell may do: read,
// reject tasks, and make cell-scoped calls (heartbeats, instance and task lifecycle,
// evacuation) for its own cell only. Callers whose certificate names no cell
// (operators, the auctioneer, the converger, the HTTP API's in-process client) are
// not restricted.
type CellAuthorizer struct {
	// Prefix of the common name of a cell's certificate, followed by the cell id
	// (bbs config cell_identity_prefix, "cell:" by default); empty turns the checks off.
	Prefix string
}

// CellOf is the cell a certificate chain's leaf names ("" when it names none).
func (a CellAuthorizer) CellOf(chain []*x509.Certificate) string {
	if a.Prefix == "" || len(chain) == 0 {
		return ""
	}
	cn := chain[0].Subject.CommonName
	if !strings.HasPrefix(cn, a.Prefix) {
		return ""
	}
	return strings.TrimPrefix(cn, a.Prefix)
}

// Authorize says whether a caller bound to cell (none when "") may call method with req.
func (a CellAuthorizer) Authorize(cell, method string, req any) error {
	if cell == "" || strings.HasPrefix(method, "/grpc.") {
		return nil
	}
	name := method[strings.LastIndex(method, "/")+1:]
	if isRead(name) || name == "RejectTask" {
		return nil
	}
	target, scoped := cellOfRequest(req)
	switch {
	case !scoped || !cellScoped[name]:
		return models.NewError(models.ErrTypeUnauthorized, "the certificate of cell %q may not call %s", cell, name)
	case target != cell:
		return models.NewError(models.ErrTypeUnauthorized, "the certificate of cell %q may not act for cell %q (%s)", cell, target, name)
	}
	return nil
}

// cellScoped are the calls a cell makes for itself: its presence, the lifecycle and
// evacuation of its instances, and its tasks.
var cellScoped = map[string]bool{
	"HeartbeatCell": true, "RemoveCell": true,
	"ClaimActualLRP": true, "StartActualLRP": true, "CrashActualLRP": true, "RemoveActualLRP": true,
	"EvacuateClaimedActualLRP": true, "EvacuateRunningActualLRP": true, "EvacuateStoppedActualLRP": true,
	"EvacuateCrashedActualLRP": true, "RemoveEvacuatingActualLRP": true,
	"StartTask": true, "CompleteTask": true,
}

// isRead reports whether an RPC only reads.
func isRead(name string) bool {
	return strings.HasPrefix(name, "List") || strings.HasPrefix(name, "Get") || name == "Subscribe" || name == "Ping"
}

// cellOfRequest is the cell a cell-scoped request acts for; scoped is false for the
// requests that name no cell.
func cellOfRequest(req any) (cell string, scoped bool) {
	switch r := req.(type) {
	case interface {
		GetActualLrpInstanceKey() *modelsv1.ActualLRPInstanceKey
	}:
		return r.GetActualLrpInstanceKey().GetCellId(), true
	case interface {
		GetCellPresence() *modelsv1.CellPresence
	}:
		return r.GetCellPresence().GetCellId(), true
	case interface{ GetCellId() string }:
		return r.GetCellId(), true
	}
	return "", false
}

// peerCell is the cell the TLS peer of ctx names ("" without TLS or without a cell).
func (a CellAuthorizer) peerCell(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return ""
	}
	return a.CellOf(info.State.PeerCertificates)
}

// UnaryInterceptor refuses unary calls a cell's certificate may not make
// (PermissionDenied), before the handler runs.
func (a CellAuthorizer) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := a.Authorize(a.peerCell(ctx), info.FullMethod, req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor refuses streaming calls a cell's certificate may not make; the
// BBS's streams only read, so it checks the method alone.
func (a CellAuthorizer) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := a.Authorize(a.peerCell(ss.Context()), info.FullMethod, nil); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// RefuseHTTP refuses an HTTP request whose client certificate names a cell: reps use
// gRPC; the HTTP API is for people and bridges.
func (a CellAuthorizer) RefuseHTTP(r *http.Request) error {
	if r.TLS == nil {
		return nil
	}
	if cell := a.CellOf(r.TLS.PeerCertificates); cell != "" {
		return models.NewError(models.ErrTypeUnauthorized, "the certificate of cell %q may not use the HTTP API", cell)
	}
	return nil
}
