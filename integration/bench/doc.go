// Package bench measures the BBS the way its clients use it: it starts the real store,
// event hub and gRPC server in-process on a private Postgres database, drives them over
// TCP with mutual TLS through the Go client, and reports rates and latency percentiles.
// The command integration/bench/cmd/bbsbench runs the scenarios and prints the report.
package bench
