module drover.dev/executor

go 1.26.0

require drover.dev/proto v0.0.0

replace drover.dev/proto => ../proto
