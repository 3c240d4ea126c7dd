package output

import (
	"io"
	"text/tabwriter"
)

// Properties is an ordered list of named values, rendered as aligned "name:  value" lines.
type Properties struct {
	names  []string
	values []string
}

// Add appends a named value.
func (p *Properties) Add(name, value string) {
	p.names = append(p.names, name)
	p.values = append(p.values, value)
}

// Render writes one line per property.
func (p *Properties) Render(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i, name := range p.names {
		writeRow(tw, []string{name + ":", p.values[i]})
	}
	return tw.Flush()
}
