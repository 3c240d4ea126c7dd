package output

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable makes text that came from the server safe to print on a terminal: every
// control character (C0, DEL, C1) and every byte that is not UTF-8 is written as a Go
// escape ("\x1b", "\n", "\u009b", "\xff"), so that a guid, a reason or a message cannot
// move the cursor, recolour or retitle the terminal, or start a line of its own.
func Printable(s string) string { return escapeControls(s, false) }

// PrintableLog is Printable for the lines an app logs: tabs and line breaks are the
// app's own layout and stay; every other control character is escaped.
func PrintableLog(s string) string { return escapeControls(s, true) }

// escapeControls escapes what Printable and PrintableLog promise; keepLayout keeps tabs
// and newlines.
func escapeControls(s string, keepLayout bool) string {
	if !needsEscape(s, keepLayout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\t' || r == '\n'):
			b.WriteRune(r)
		case unicode.IsControl(r):
			quoted := strconv.QuoteRune(r) // '\x1b', '\n', '\u009b'
			b.WriteString(quoted[1 : len(quoted)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether s holds anything escapeControls changes.
func needsEscape(s string, keepLayout bool) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return true
			}
		}
		if unicode.IsControl(r) && !(keepLayout && (r == '\t' || r == '\n')) {
			return true
		}
	}
	return false
}
