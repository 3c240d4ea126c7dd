// Package converger is the root of the converger module: the service that compares
// desired with actual state and corrects the difference (see plan for the pure core).
package converger
