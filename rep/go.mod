module drover.dev/rep

go 1.26.0

require (
	drover.dev/bbs v0.0.0
	drover.dev/executor v0.0.0
	drover.dev/lib v0.0.0
	drover.dev/proto v0.0.0
)

replace (
	drover.dev/bbs => ../bbs
	drover.dev/executor => ../executor
	drover.dev/lib => ../lib
	drover.dev/proto => ../proto
)
