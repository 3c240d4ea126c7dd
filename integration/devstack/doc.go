// Package devstack launches drover on one machine: a private Postgres (scripts/postgres.sh),
// dev certificates (lib/devcerts), the binaries built from this repository, and one or
// more BBS processes, each with its own config file, log files and pid file, waited on
// until their gRPC health check answers SERVING and their debug server answers.
//
// It has two modes that share all of that code:
//   - the persistent dev stack (Up, Load, Stack.Down) under .drover/ with fixed ports,
//     whose state file lets `devstack down` in another process stop everything;
//   - the test mode (NewTest) with a private temporary home, a fresh database and free
//     ports, stopped and removed by t.Cleanup even when the test fails.
package devstack
