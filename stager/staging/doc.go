// Package staging is the stager's pure core: it validates a StageRequest, names the
// staging task, resolves the buildpacks to offer the builder, builds the staging task's
// definition (downloads, the lifecycle builder, uploads), turns a failed task into the
// reason a user reads, and inspects buildpack archives. Nothing here does I/O.
package staging
