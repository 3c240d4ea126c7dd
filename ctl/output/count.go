package output

import "strconv"

// Count renders n with its noun, plural unless n is 1 or -1: "1 instance", "3 instances".
// nouns are regular English nouns ("instance", "file", "process" → "processes").
func Count(n int64, noun string) string {
	if n != 1 && n != -1 {
		if len(noun) > 0 && (noun[len(noun)-1] == 's' || noun[len(noun)-1] == 'x') {
			noun += "es"
		} else {
			noun += "s"
		}
	}
	return strconv.FormatInt(n, 10) + " " + noun
}
