// Package rep is the cell agent: it registers the cell's presence in the BBS, serves
// drover.rep.v1 to the auctioneer and the BBS, drives the in-process executor, and keeps
// the executor's containers and the BBS's records of this cell in step.
package rep
