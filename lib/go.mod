module drover.dev/lib

go 1.26.0
