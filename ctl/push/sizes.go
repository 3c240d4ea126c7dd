package push

import (
	"drover.dev/ctl/output"
	"drover.dev/fileserver/client"
)

// Missing returns the files the server does not have (client.Missing).
var Missing = client.Missing

// TotalSize adds up the files' sizes.
func TotalSize(rs []Resource) int64 {
	var n int64
	for _, r := range rs {
		n += r.Size
	}
	return n
}

// HumanBytes renders a byte count as "512B", "1.2K", "3.4M" or "1.0G" (output.Bytes).
func HumanBytes(n int64) string { return output.Bytes(n) }
