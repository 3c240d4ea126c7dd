package output

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Age renders how long ago unixNanos was, kubectl style ("45s", "3m12s", "2h5m",
// "3d4h"); zero and future times render as Empty and "0s".
func Age(unixNanos int64, now time.Time) string {
	if unixNanos == 0 {
		return Empty
	}
	return ShortDuration(now.Sub(time.Unix(0, unixNanos)))
}

// Remaining renders how long until unixNanos ("in 25s"), or "expired".
func Remaining(unixNanos int64, now time.Time) string {
	if unixNanos == 0 {
		return "never"
	}
	d := time.Unix(0, unixNanos).Sub(now)
	if d <= 0 {
		return "expired"
	}
	return "in " + ShortDuration(d)
}

// ShortDuration renders d with at most two units, rounded down; negative is "0s".
func ShortDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	s := int64(d / time.Second)
	days, s := s/86400, s%86400
	hours, s := s/3600, s%3600
	minutes, s := s/60, s%60
	switch {
	case days > 0:
		return twoUnits(days, "d", hours, "h")
	case hours > 0:
		return twoUnits(hours, "h", minutes, "m")
	case minutes > 0:
		return twoUnits(minutes, "m", s, "s")
	default:
		return fmt.Sprintf("%ds", s)
	}
}

func twoUnits(major int64, majorUnit string, minor int64, minorUnit string) string {
	if minor == 0 {
		return fmt.Sprintf("%d%s", major, majorUnit)
	}
	return fmt.Sprintf("%d%s%d%s", major, majorUnit, minor, minorUnit)
}

// Timestamp renders unixNanos as RFC 3339 in UTC, or Empty for zero.
func Timestamp(unixNanos int64) string {
	if unixNanos == 0 {
		return Empty
	}
	return time.Unix(0, unixNanos).UTC().Format(time.RFC3339)
}

// TimestampWithAge renders unixNanos as RFC 3339 followed by its age
// ("2026-11-22T02:24:00Z (3m ago)"), or Empty for zero.
func TimestampWithAge(unixNanos int64, now time.Time) string {
	if unixNanos == 0 {
		return Empty
	}
	return Timestamp(unixNanos) + " (" + Age(unixNanos, now) + " ago)"
}

// PortMappings renders container:host pairs ("8080:61001,5050:61002").
func PortMappings(ports []*modelsv1.PortMapping) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		parts = append(parts, fmt.Sprintf("%d:%d", p.GetContainerPort(), p.GetHostPort()))
	}
	return strings.Join(parts, ",")
}

// Uints renders numbers as a comma-separated list.
func Uints(values []uint32) string {
	parts := make([]string, 0, len(values))
	for _, v := range values {
		parts = append(parts, strconv.FormatUint(uint64(v), 10))
	}
	return strings.Join(parts, ",")
}

// Int renders an integer.
func Int[T ~int32 | ~int64 | ~uint32 | ~uint64 | ~int](v T) string {
	return fmt.Sprint(v)
}
