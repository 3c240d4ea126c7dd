// Package harmonizer keeps the executor's containers and the BBS's records of this cell
// in step (cell.md §2.6–2.7): an event consumer and a periodic bulker feed one queue of
// operations keyed by container guid; the LRP and task processors turn each container's
// state into BBS calls and executor actions.
package harmonizer
