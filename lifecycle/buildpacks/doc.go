// Package buildpacks holds the tests of drover's buildpacks (the POSIX sh scripts in the
// repository's top-level buildpacks/ folder): each buildpack's detect, and staging the
// examples/ apps with the real builder on the host, reaching the npm registry and the Go
// module proxy for the nodejs and go buildpacks.
package buildpacks
