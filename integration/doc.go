// Package integration is drover's end-to-end suite: its tests run the real binaries
// (built from this repository) in a stack private to each test (devstack/devstacktest),
// against the private Postgres of scripts/postgres.sh, and talk to them over HTTPS, gRPC
// and grpcurl the way users do.
package integration
