package events

import "fmt"

// AnonymousIdentity names the subscribers of a listener without TLS, which share one cap.
const AnonymousIdentity = ""

// IdentityMetadataKey is the gRPC metadata key through which the HTTP API names the
// caller of an event stream to the BBS's in-process gRPC listener (the only listener
// that trusts it).
const IdentityMetadataKey = "drover-subscriber-identity"

// identityName is an identity as logs and messages show it.
func identityName(identity string) string {
	if identity == AnonymousIdentity {
		return "the anonymous caller"
	}
	return fmt.Sprintf("%q", identity)
}
