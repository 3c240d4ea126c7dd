// Package models is the BBS's pure core: validation of every request and record,
// the ActualLRP and Task state machines, the crash restart calculator, the event
// calculator and the conversions between a DesiredLRP and its views. It does no I/O.
package models
