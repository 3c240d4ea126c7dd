// Package executor runs the containers of one cell. It is a library used in-process by
// the rep: Client is what the rep calls (allocate, run, stop, delete, list, events,
// metrics, logs), Runtime is what a container backend provides (containerd, or the
// simulated one for unit tests and scale runs). The engine package joins the two: it
// keeps container states and resources, turns action trees into steps, watches health,
// keeps logs and emits events.
package executor
