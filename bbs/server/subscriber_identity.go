package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"drover.dev/bbs/events"
)

// forwardedIdentityKey marks a context whose subscriber identity the HTTP API forwarded
// over the in-process listener.
type forwardedIdentityKey struct{}

// subscriberIdentity is who an event stream counts against for the per-identity cap:
// the identity the HTTP API forwarded (in-process listener only), else the common name
// of the TLS peer's certificate, else events.AnonymousIdentity.
func subscriberIdentity(ctx context.Context) string {
	if id, ok := ctx.Value(forwardedIdentityKey{}).(string); ok {
		return id
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return events.AnonymousIdentity
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return events.AnonymousIdentity
	}
	return info.State.PeerCertificates[0].Subject.CommonName
}

// TrustForwardedIdentity is a stream interceptor for the BBS's in-process listener
// only, whose one client is the HTTP API: it takes the subscriber identity the HTTP API
// forwards in the events.IdentityMetadataKey metadata (its own caller's certificate),
// so that event streams over HTTP count against their caller's cap. Network listeners
// must not install it, or a caller could count itself as another.
func TrustForwardedIdentity() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		if ids := md.Get(events.IdentityMetadataKey); len(ids) == 1 {
			ss = &identityStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), forwardedIdentityKey{}, ids[0])}
		}
		return handler(srv, ss)
	}
}

// identityStream is a stream whose context carries a forwarded identity.
type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }
