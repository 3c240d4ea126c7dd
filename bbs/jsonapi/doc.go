// Package jsonapi converts between the BBS protobuf models and the JSON shapes of the
// LRP API seed: snake_case DesiredLRP and task requests decoded strictly with protojson
// (no unknown fields, numbers as JSON numbers, nesting bounded by models.MaxJSONDepth),
// and flat views of ActualLRPs, tasks, cells and events. It does no I/O, so both the
// BBS HTTP gateway and droverctl use it.
package jsonapi
