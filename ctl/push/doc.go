// Package push is what Cloud Controller does for "cf push" (seeds 001, 002 and 004),
// on drover: it uploads an app's bits with resource matching, stages them through
// the stager (which runs the stack's buildpacks in a staging task), and runs the droplet as a desired LRP
// named by the app guid and a version, replacing older versions without downtime.
//
// The pure parts (guids, versions, the stage request, LRP definitions, sizes) have no I/O;
// Push drives the flow through the small interfaces in deps.go.
package push
