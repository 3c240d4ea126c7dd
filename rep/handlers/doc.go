// Package handlers serves drover.rep.v1.RepService: a thin layer from the auctioneer's
// and the BBS's requests to the executor, with the pure rules in package translate.
package handlers
