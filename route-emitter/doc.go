// Package routeemitter is drover's route-emitter: it keeps a routing table of the
// RUNNING instances of routed LRPs, fed by the BBS's resumable event stream and periodic
// full syncs, and publishes it to gorouter over NATS (router.register /
// router.unregister, the router.greet / router.start handshake, periodic re-registration).
package routeemitter
