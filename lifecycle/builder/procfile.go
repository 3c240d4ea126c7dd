package builder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var procfileLine = regexp.MustCompile(`^([A-Za-z0-9_-]+):\s*(.*)$`)

// ParseProcfile reads a Heroku Procfile: one `TYPE: COMMAND` per line; blank lines and
// lines starting with # are ignored. Its error names every bad line.
func ParseProcfile(b []byte) (map[string]string, error) {
	types := map[string]string{}
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := procfileLine.FindStringSubmatch(line)
		switch {
		case m == nil:
			bad = append(bad, fmt.Sprintf("line %d: want `TYPE: COMMAND` (TYPE of letters, digits, _ and -)", n))
		case strings.TrimSpace(m[2]) == "":
			bad = append(bad, fmt.Sprintf("line %d: process type %q has no command", n, m[1]))
		default:
			if _, dup := types[m[1]]; dup {
				bad = append(bad, fmt.Sprintf("line %d: process type %q is given twice", n, m[1]))
			}
			types[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if err := sc.Err(); err != nil {
		bad = append(bad, err.Error())
	}
	if len(bad) > 0 {
		return nil, errors.New("Procfile: " + strings.Join(bad, "; "))
	}
	return types, nil
}
