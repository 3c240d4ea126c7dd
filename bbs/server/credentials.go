package server

import (
	"context"

	"drover.dev/lib/authz"
)

// mayReadImageCredentials reports whether the caller of ctx may read the image registry
// credentials of an LRP or task: a cell, which pulls the image, may; an identified
// caller of any other role (operators, the HTTP API, components) may not. A caller
// without an identity is a server without a guard (unit tests, a plaintext dev setup),
// where nothing is authenticated anyway.
func mayReadImageCredentials(ctx context.Context) bool {
	id, ok := authz.FromContext(ctx)
	return !ok || id.Role == cell
}
