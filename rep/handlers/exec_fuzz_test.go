package handlers

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// FuzzExecStart: any ExecStart a client can encode is validated without a panic, and
// one that passes yields a spec with the command it named.
func FuzzExecStart(f *testing.F) {
	for _, s := range []*repv1.ExecStart{
		{ProcessGuid: "pg", Args: []string{"sh"}, Tty: true, Size: &repv1.TerminalSize{Rows: 24, Columns: 80}},
		{Index: -1, Dir: "x"},
	} {
		b, _ := proto.Marshal(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := &repv1.ExecStart{}
		if proto.Unmarshal(data, start) != nil {
			return
		}
		if ValidateExecStart(start) != "" {
			return
		}
		spec := ExecSpec(start, &executor.RunInfo{})
		if len(spec.Args) == 0 || spec.Args[0] == "" {
			t.Fatalf("a valid start gave no command: %v", start)
		}
	})
}
