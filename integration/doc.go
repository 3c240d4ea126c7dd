// Package integration is drover's end-to-end suite: its tests run the real BBS binary
// (built from this repository) through devstack's test mode, against the private
// Postgres of scripts/postgres.sh, and talk to it over HTTPS, gRPC and grpcurl the way
// users do.
package integration
