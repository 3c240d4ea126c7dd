// Package pass runs convergence passes against the BBS: one pass takes a snapshot,
// plans with the pure converger/plan core, applies the plan through the BBS's
// conditional writes (logging one line per action), records metrics and reports a
// summary of the pass to the BBS. Loop repeats passes as an ifrit member.
package pass
