// Package devstack launches drover on one machine: a private Postgres (scripts/postgres.sh),
// dev certificates (lib/devcerts), the binaries built from this repository, and one or
// more BBS processes, each with its own config file, log files and pid file, waited on
// until their gRPC health check answers SERVING and their debug server answers; with
// cells, also the private containerd, the auctioneer, the reps, the converger, NATS,
// the stand-in router (package router), the route-emitter and the fileserver.
//
// It serves two kinds of stacks that share all of that code:
//   - the persistent dev stack behind `make up` (Up, Load, Stack.Down; the command
//     devstack/cmd/devstack) under .drover/ with fixed ports, whose state file lets
//     `devstack down` in another process stop everything;
//   - a test's private stack, which package devstacktest describes with the building
//     blocks here (Stack.AddBBS, AddCells, AddConverger, AddRouting, AddFileserver,
//     PrepareFiles, Start) on free ports, with an embedded NATS (natstest), stopped and
//     removed when the test ends.
//
// This package and the launcher link neither package testing nor the store's test
// helpers; devstacktest and natstest, which do, are imported by tests only.
package devstack
