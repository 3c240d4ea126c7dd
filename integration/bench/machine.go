package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where a benchmark ran.
type Machine struct {
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	MemoryBytes uint64 `json:"memory_bytes"`
	GoVersion   string `json:"go_version"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	Postgres    string `json:"postgres,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute loads before and
	// after the scenarios (the end includes the benchmark's own load): the machine may
	// be shared, and a load above the CPU count slows every figure down.
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
}

// DescribeMachine reads the CPU count, the CPU model from /proc/cpuinfo and the memory
// from /proc/meminfo; fields it cannot read stay empty.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseUint(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		m.MemoryBytes = kb * 1024
	}
	return m
}

// LoadAverage returns the 1, 5 and 15 minute load averages from /proc/loadavg, or "".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return ""
	}
	return strings.Join(fields[:3], " ")
}

// procField returns the trimmed value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
