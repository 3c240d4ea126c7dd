package models

// Limits on what a request may hold. ValidateRequest enforces every one of them for the
// gRPC API, and so for the HTTP API, which calls it; docs/api.md lists them. A request
// over a limit is an InvalidRequest error naming the field and the limit.
const (
	// MaxIdentifierLength bounds every identifier, in bytes: process, task and instance
	// guids, domains, cell ids, log guids and sources, metrics guids, zones, placement
	// tags, users, lock keys and owners, and the keys of every map (metric tag names,
	// router names, ...). Identifiers are Postgres index keys (an index entry must stay
	// under about 2.7 KB) and end up in logs, metrics and URLs; 255 is what DNS names
	// and most systems' names allow. Identifiers must not contain control characters.
	MaxIdentifierLength = 255

	// MaxStringLength bounds every other string of a request, in bytes (paths, URLs,
	// arguments, environment values, messages, ...), unless the field has a smaller
	// limit of its own. It is Linux's MAX_ARG_STRLEN, the longest single argument or
	// environment string execve accepts. No string may contain NUL (Postgres text cannot
	// hold it and execve cannot pass it), except file contents and the crash, failure and
	// rejection reasons, which are cleaned rather than refused (see TruncateReason).
	MaxStringLength = 128 * 1024

	// MaxAnnotationLength is the longest annotation of a DesiredLRP, update or task, in
	// bytes (Diego's limit).
	MaxAnnotationLength = 10 * 1024

	// MaxRoutesLength is the longest total JSON encoding of all router values of routes,
	// in bytes (Diego's limit).
	MaxRoutesLength = 128 * 1024

	// MaxRoutesDepth is how deeply the JSON of one router value may nest (arrays and
	// objects). gorouter's and the TCP router's routes nest 3 levels; every level adds
	// three levels of protobuf nesting to the events that carry the routes, and
	// protobuf decoders stop at 100 (C++, Java) or 10,000 (Go).
	MaxRoutesDepth = 16

	// MaxVolumeMountedFilesLength is the largest total content of volume_mounted_files,
	// in bytes (Diego's limit).
	MaxVolumeMountedFilesLength = 1024 * 1024

	// MaxActionDepth is how many actions deep one action tree may nest: a run action
	// alone is 1, a run in a serial is 2, and timeout, try and emit_progress count like
	// any other level. Diego's deepest trees (staging) are about 5 deep. It keeps every
	// stored event decodable: protobuf decoders stop at 100 levels (C++, Java).
	MaxActionDepth = 16

	// MaxActionChildren is how many actions one serial, parallel or codependent action
	// may hold.
	MaxActionChildren = 100

	// MaxDurationMs bounds every timeout and interval given in milliseconds (timeout
	// actions, health check timeouts and intervals): 30 days. Larger values are
	// mistakes, and huge ones overflow a Go time.Duration into a negative one.
	// (start_timeout, in seconds, cannot overflow and keeps Diego's missing bound.)
	MaxDurationMs = 30 * 24 * 60 * 60 * 1000

	// MaxInstances is the most instances one DesiredLRP may ask for. Diego's published
	// scale is 250,000 instances over 1,000 cells; one LRP of 10,000 is far beyond any
	// app, and each instance is a row and an event written in the desiring transaction.
	MaxInstances = 10000

	// MaxPorts is how many container ports one DesiredLRP may expose; each one is a
	// host port (and a TLS proxy port) on the cell. Duplicate ports are refused too.
	MaxPorts = 10

	// MaxEnvironmentVariables is how many environment variables a DesiredLRP, task or
	// run action may set (each list on its own).
	MaxEnvironmentVariables = 256

	// MaxEgressRules is how many egress rules a DesiredLRP or task may carry; each is a
	// firewall rule on the cell.
	MaxEgressRules = 1000

	// MaxPlacementTags is how many placement tags a DesiredLRP or task may have, and
	// how many placement tags, optional placement tags and properties of one rootfs
	// provider a cell may have.
	MaxPlacementTags = 32

	// MaxMetricTags is how many metric tags a DesiredLRP, update, task or instance may
	// have.
	MaxMetricTags = 64

	// MaxReasonLength is the longest crash reason, placement error or failure reason
	// kept, in bytes: longer ones that cells report are cut (TruncateReason), and an
	// operator's cordon or pause reason that is longer is refused.
	MaxReasonLength = 1024
	// MaxExecArgs bounds the arguments of a recorded exec (droverctl exec).
	MaxExecArgs = 256

	// MaxTaskResultLength is the longest task result a cell may report, in bytes: the
	// rep reads the first 10 KiB of result_file, as Diego's does.
	MaxTaskResultLength = 10 * 1024

	// MaxMessageDepth is how deeply any request may nest messages. The action tree and
	// routes limits above keep valid requests far below it; it bounds every other
	// recursion.
	MaxMessageDepth = 64

	// MaxJSONDepth is how deeply a JSON request body of the HTTP API may nest arrays and
	// objects. The decoder refuses deeper bodies before decoding them; it is above what
	// MaxActionDepth allows (3 JSON levels per action), so that too deep an action tree
	// is refused by validation, with the field named.
	MaxJSONDepth = 100
)

// maxReportedViolations is how many violations one error lists; the rest are counted.
const maxReportedViolations = 50
