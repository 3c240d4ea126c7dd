// Package output renders BBS models for droverctl: aligned text tables for people
// and one JSON object per line for scripts.
package output

import (
	"io"
	"strings"
	"text/tabwriter"
)

// Empty is what a table shows for an empty cell, so that columns stay readable.
const Empty = "-"

// Table is a header and rows of text, rendered with aligned columns.
type Table struct {
	header []string
	rows   [][]string
}

// NewTable starts a table with the given column names.
func NewTable(header ...string) *Table {
	return &Table{header: header}
}

// Add appends a row; missing cells are shown empty and extra cells are dropped.
func (t *Table) Add(cells ...string) {
	row := make([]string, len(t.header))
	copy(row, cells)
	t.rows = append(t.rows, row)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the header and rows, columns separated by at least two spaces.
func (t *Table) Render(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	writeRow(tw, t.header)
	for _, row := range t.rows {
		writeRow(tw, row)
	}
	return tw.Flush()
}

func writeRow(w io.Writer, cells []string) {
	clean := make([]string, len(cells))
	for i, c := range cells {
		clean[i] = cell(c)
	}
	// Write errors surface from Flush.
	_, _ = io.WriteString(w, strings.Join(clean, "\t")+"\n")
}

// cell makes a value safe for one table cell: no tabs or line breaks, no other control
// characters (Printable), never blank.
func cell(s string) string {
	s = Printable(strings.Join(strings.Fields(s), " "))
	if s == "" {
		return Empty
	}
	return s
}
