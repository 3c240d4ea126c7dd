package logbuf

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor"
)

func texts(lines []executor.LogLine) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, l.Text)
	}
	return out
}

func TestWriterSplitsLines(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+5)
	cases := []struct {
		name   string
		writes []string
		flush  bool
		want   []string
	}{
		{"newline", []string{"a\nb\n"}, false, []string{"a", "b"}},
		{"carriage return", []string{"a\rb\r\n"}, false, []string{"a", "b"}},
		{"split across writes", []string{"he", "llo\nwor", "ld\n"}, false, []string{"hello", "world"}},
		{"partial kept until flush", []string{"a\npart"}, false, []string{"a"}},
		{"flush emits partial", []string{"a\npart"}, true, []string{"a", "part"}},
		{"empty lines skipped", []string{"\n\n\na\n"}, false, []string{"a"}},
		{"long line cut", []string{long + "\n"}, false, []string{long[:MaxLineBytes], "xxxxx"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := New(100)
			w := NewWriter(b, "g", "APP", Stdout)
			for _, s := range tc.writes {
				n, err := w.Write([]byte(s))
				require.NoError(t, err)
				require.Equal(t, len(s), n)
			}
			if tc.flush {
				w.Flush()
			}
			lines := b.Lines(0)
			assert.Equal(t, tc.want, texts(lines))
			for _, l := range lines {
				assert.Equal(t, "g", l.ContainerGuid)
				assert.Equal(t, "APP", l.Source)
				assert.Equal(t, Stdout, l.Stream)
			}
		})
	}
}

func TestBufferRingAndTail(t *testing.T) {
	cases := []struct {
		name     string
		capacity int
		appended int
		tail     int
		want     []string
	}{
		{"under capacity", 5, 3, 0, []string{"0", "1", "2"}},
		{"wraps", 3, 5, 0, []string{"2", "3", "4"}},
		{"tail", 5, 5, 2, []string{"3", "4"}},
		{"tail larger than kept", 3, 5, 10, []string{"2", "3", "4"}},
		{"empty", 3, 0, 0, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.capacity)
			for i := 0; i < tc.appended; i++ {
				b.Append(executor.LogLine{Text: string(rune('0' + i))})
			}
			assert.Equal(t, tc.want, texts(b.Lines(tc.tail)))
		})
	}
}

func collect(t *testing.T, ch <-chan executor.LogLine, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case l, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, l.Text)
		case <-deadline:
			t.Fatalf("got %v, wanted %d lines", out, n)
		}
	}
	return out
}

func TestSubscribeWithoutFollowEnds(t *testing.T) {
	b := New(10)
	b.Append(executor.LogLine{Text: "a"})
	b.Append(executor.LogLine{Text: "b"})
	ch := b.Subscribe(context.Background(), 1, false)
	assert.Equal(t, []string{"b"}, collect(t, ch, 5))
}

func TestSubscribeFollowsUntilClose(t *testing.T) {
	b := New(10)
	b.Append(executor.LogLine{Text: "a"})
	ch := b.Subscribe(context.Background(), 0, true)
	assert.Equal(t, []string{"a"}, collect(t, ch, 1))
	b.Append(executor.LogLine{Text: "b"})
	b.Append(executor.LogLine{Text: "c"})
	assert.Equal(t, []string{"b", "c"}, collect(t, ch, 2))
	b.Close()
	_, ok := <-ch
	assert.False(t, ok, "channel closes when the buffer closes")
	b.Append(executor.LogLine{Text: "d"})
	assert.Len(t, b.Lines(0), 3, "appends after close are dropped")
}

func TestSubscribeFollowEndsWithContext(t *testing.T) {
	b := New(10)
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Subscribe(ctx, 0, true)
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, 5*time.Second, 5*time.Millisecond)
}
