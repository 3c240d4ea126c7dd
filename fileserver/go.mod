module drover.dev/fileserver

go 1.26.0

replace drover.dev/lib => ../lib
