// Package auctioneer places LRP instances and tasks onto cells: it batches auction
// requests, fetches every live cell's state, runs the pure placement in package auction,
// sends each rep its work and reports what could not be placed to the BBS.
package auctioneer
