package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printable shows what anyone allowed to annotate a gate wrote (a reason, a requestedBy, a
// schedule's error) on a terminal as text, never as terminal commands: every rune that is not
// printable (an escape such as \x1b[2J, a carriage return, a C1 control, a bidirectional
// override) is written the way strconv.Quote writes it (\x1b, \r, \u009b, \u202e), and so is a
// byte that is not UTF-8 (\xff).
func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !strconv.IsPrint(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// collapse keeps a multi-line text from breaking a layout: its runs of white space become one
// space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// oneLine is user-written text as a terminal shows it: on one line, and printable.
func oneLine(s string) string { return printable(collapse(s)) }

// printableLines is printable line by line, for a multi-line message such as an error.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}
