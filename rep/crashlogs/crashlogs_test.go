package crashlogs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/rep/crashlogs"
)

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func lines(guid string, texts ...string) []executor.LogLine {
	out := make([]executor.LogLine, len(texts))
	for i, t := range texts {
		out[i] = executor.LogLine{ContainerGuid: guid, Source: "APP", Stream: "stdout", Text: t}
	}
	return out
}

func texts(e crashlogs.Entry) []string {
	var out []string
	for _, l := range e.Lines {
		out = append(out, l.Text)
	}
	return out
}

func key(pg string, index int32) crashlogs.Key { return crashlogs.Key{ProcessGuid: pg, Index: index} }

func TestKeepAndGet(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	s := crashlogs.New(crashlogs.Options{MaxLines: 3, Now: c.Now})
	require.Equal(t, 3, s.MaxLines())

	s.Keep(key("pg", 1), lines("c1", "a", "b", "c", "d"))
	s.Keep(key("pg", 0), lines("c0", "x"))
	s.Keep(key("other", 0), lines("o0", "not mine"))

	got := s.Get("pg", nil)
	require.Len(t, got, 2)
	require.Equal(t, int32(0), got[0].Index, "sorted by index")
	require.Equal(t, []string{"x"}, texts(got[0]))
	require.Equal(t, []string{"b", "c", "d"}, texts(got[1]), "only the last MaxLines lines")
	require.Equal(t, c.now, got[1].CrashedAt)

	one := int32(1)
	got = s.Get("pg", &one)
	require.Len(t, got, 1)
	require.Equal(t, "c1", got[0].Lines[0].ContainerGuid)
	require.Empty(t, s.Get("nobody", nil))

	// A later crash of the same slot replaces the earlier one.
	s.Keep(key("pg", 1), lines("c1b", "again"))
	got = s.Get("pg", &one)
	require.Equal(t, []string{"again"}, texts(got[0]))

	// Get returns copies.
	got[0].Lines[0].Text = "changed"
	require.Equal(t, []string{"again"}, texts(s.Get("pg", &one)[0]))
}

func TestCrashesExpire(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	s := crashlogs.New(crashlogs.Options{MaxAge: time.Minute, Now: c.Now})
	s.Keep(key("pg", 0), lines("c0", "old"))
	c.now = c.now.Add(30 * time.Second)
	s.Keep(key("pg", 1), lines("c1", "newer"))

	c.now = c.now.Add(31 * time.Second)
	got := s.Get("pg", nil)
	require.Len(t, got, 1, "the first crash is older than MaxAge")
	require.Equal(t, int32(1), got[0].Index)

	c.now = c.now.Add(time.Minute)
	require.Empty(t, s.Get("pg", nil))
	require.Zero(t, s.Len())
}

func TestBounds(t *testing.T) {
	t.Run("entries: the oldest crash goes first", func(t *testing.T) {
		c := &clock{now: time.Unix(1000, 0)}
		s := crashlogs.New(crashlogs.Options{MaxEntries: 2, Now: c.Now})
		for i := range int32(3) {
			s.Keep(key("pg", i), lines("c", fmt.Sprint(i)))
			c.now = c.now.Add(time.Second)
		}
		require.Equal(t, 2, s.Len())
		got := s.Get("pg", nil)
		require.Equal(t, int32(1), got[0].Index)
		require.Equal(t, int32(2), got[1].Index)
	})

	t.Run("bytes of one crash: the newest lines win, a long line is cut", func(t *testing.T) {
		s := crashlogs.New(crashlogs.Options{MaxEntryBytes: 10})
		s.Keep(key("pg", 0), lines("c", "aaaa", "bbbb", "cccc"))
		require.Equal(t, []string{"bbbb", "cccc"}, texts(s.Get("pg", nil)[0]))
		s.Keep(key("pg", 0), lines("c", strings.Repeat("x", 5)+"0123456789"))
		require.Equal(t, []string{"0123456789"}, texts(s.Get("pg", nil)[0]))
	})

	t.Run("total bytes: the oldest crash goes first, the newest stays", func(t *testing.T) {
		c := &clock{now: time.Unix(1000, 0)}
		s := crashlogs.New(crashlogs.Options{MaxBytes: 10, Now: c.Now})
		s.Keep(key("pg", 0), lines("c", "aaaaaa"))
		c.now = c.now.Add(time.Second)
		s.Keep(key("pg", 1), lines("c", "bbbbbb"))
		got := s.Get("pg", nil)
		require.Len(t, got, 1)
		require.Equal(t, []string{"bbbbbb"}, texts(got[0]))
		c.now = c.now.Add(time.Second)
		s.Keep(key("pg", 2), lines("c", strings.Repeat("z", 50)))
		got = s.Get("pg", nil)
		require.Len(t, got, 1, "an entry never exceeds the total")
		require.Equal(t, strings.Repeat("z", 10), got[0].Lines[0].Text)
	})

	t.Run("nothing to keep", func(t *testing.T) {
		s := crashlogs.New(crashlogs.Options{})
		s.Keep(key("pg", 0), nil)
		got := s.Get("pg", nil)
		require.Len(t, got, 1)
		require.Empty(t, got[0].Lines)
	})
}
