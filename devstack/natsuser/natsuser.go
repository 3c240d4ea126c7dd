// Package natsuser names the users of drover's NATS: the dev stack's nats-server
// (scripts/nats.sh) and the tests' embedded server (natstest) both refuse clients
// without credentials and give each user a password of its own and only its side of the
// gorouter protocol (natstest.Permissions).
package natsuser

const (
	// RouteEmitter publishes routes.
	RouteEmitter = "route-emitter"
	// Router is a router (gorouter, the stand-in router): it receives routes.
	Router = "router"
)

// All are the users of drover's NATS.
var All = []string{RouteEmitter, Router}
