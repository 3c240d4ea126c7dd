// Package translate is the rep's pure core: it turns auction work into executor
// allocations and tags, containers back into the cell's state, BBS records into run
// requests, and executor network info into the BBS's. Nothing here does I/O.
package translate
