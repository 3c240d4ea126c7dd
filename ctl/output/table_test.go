package output_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/output"
)

func TestTableRender(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		rows   [][]string
		want   string
	}{
		{
			name:   "aligns columns with two spaces",
			header: []string{"NAME", "N"},
			rows:   [][]string{{"a", "1"}, {"longer-name", "22"}},
			want:   "NAME         N\na            1\nlonger-name  22\n",
		},
		{
			name:   "empty cells show a dash",
			header: []string{"A", "B", "C"},
			rows:   [][]string{{"x", "", "z"}},
			want:   "A  B  C\nx  -  z\n",
		},
		{
			name:   "tabs and line breaks cannot break the layout",
			header: []string{"A", "B"},
			rows:   [][]string{{"one\ttwo", "line1\nline2  end"}},
			want:   "A        B\none two  line1 line2 end\n",
		},
		{
			name:   "short rows are padded, long rows cut",
			header: []string{"A", "B"},
			rows:   [][]string{{"x"}, {"1", "2", "3"}},
			want:   "A  B\nx  -\n1  2\n",
		},
		{
			name:   "header only",
			header: []string{"DOMAIN"},
			want:   "DOMAIN\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := output.NewTable(tt.header...)
			for _, row := range tt.rows {
				table.Add(row...)
			}
			var b bytes.Buffer
			require.NoError(t, table.Render(&b))
			require.Equal(t, tt.want, b.String())
			require.Equal(t, len(tt.rows), table.Len())
		})
	}
}

func TestPropertiesRender(t *testing.T) {
	p := &output.Properties{}
	p.Add("process_guid", "app")
	p.Add("instances", "3")
	p.Add("annotation", "")
	var b bytes.Buffer
	require.NoError(t, p.Render(&b))
	require.Equal(t, "process_guid:  app\ninstances:     3\nannotation:    -\n", b.String())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRenderReportsWriteErrors(t *testing.T) {
	table := output.NewTable("A")
	table.Add("x")
	require.ErrorContains(t, table.Render(failingWriter{}), "disk full")
	require.ErrorContains(t, output.WriteJSONLine(failingWriter{}, map[string]int{"a": 1}), "disk full")
}

func TestWriteJSONLine(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, output.WriteJSONLine(&b, map[string]string{"url": "http://x/?a=1&b=<2>"}))
	require.NoError(t, output.WriteJSONLine(&b, json.RawMessage(`{ "spaced" :  [1, 2] }`)))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Equal(t, []string{`{"url":"http://x/?a=1&b=<2>"}`, `{"spaced":[1,2]}`}, lines)

	require.Error(t, output.WriteJSONLine(&b, func() {}), "an unencodable value is an error")
}

func TestDurations(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixNano() }
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"zero time has no age", output.Age(0, now), "-"},
		{"seconds", output.Age(ago(45*time.Second+300*time.Millisecond), now), "45s"},
		{"minutes and seconds", output.Age(ago(3*time.Minute+12*time.Second), now), "3m12s"},
		{"whole minutes", output.Age(ago(5*time.Minute), now), "5m"},
		{"hours and minutes", output.Age(ago(2*time.Hour+5*time.Minute+59*time.Second), now), "2h5m"},
		{"days and hours", output.Age(ago(76*time.Hour), now), "3d4h"},
		{"future age", output.Age(now.Add(time.Minute).UnixNano(), now), "0s"},
		{"remaining", output.Remaining(now.Add(25*time.Second+time.Millisecond).UnixNano(), now), "in 25s"},
		{"expired", output.Remaining(ago(time.Second), now), "expired"},
		{"no expiry", output.Remaining(0, now), "never"},
		{"timestamp in UTC", output.Timestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600)).UnixNano()), "2026-01-02T02:04:05Z"},
		{"timestamp zero", output.Timestamp(0), "-"},
		{"timestamp with age", output.TimestampWithAge(ago(90*time.Second), now), "2026-11-22T11:58:30Z (1m30s ago)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.got)
		})
	}
}
