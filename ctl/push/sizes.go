package push

import "fmt"

// Missing returns the files the server does not have: those of all whose sha1 and
// size are not in known.
func Missing(all, known []Resource) []Resource {
	type id struct {
		sha1 string
		size int64
	}
	have := make(map[id]bool, len(known))
	for _, r := range known {
		have[id{r.SHA1, r.Size}] = true
	}
	var missing []Resource
	for _, r := range all {
		if !have[id{r.SHA1, r.Size}] {
			missing = append(missing, r)
		}
	}
	return missing
}

// TotalSize adds up the files' sizes.
func TotalSize(rs []Resource) int64 {
	var n int64
	for _, r := range rs {
		n += r.Size
	}
	return n
}

// HumanBytes renders a byte count as "512B", "1.2K", "3.4M" or "1.0G".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	value, suffix := float64(n)/unit, "K"
	for _, next := range []string{"M", "G", "T"} {
		if value < unit {
			break
		}
		value, suffix = value/unit, next
	}
	return fmt.Sprintf("%.1f%s", value, suffix)
}
