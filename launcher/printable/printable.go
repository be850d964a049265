// Package printable makes text from files anyone can write safe to show on
// a terminal. It decides nothing about a sandbox; every message grok-sandbox
// prints from config or file names goes through String.
package printable

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// String returns s with every character a terminal would act on instead
// of showing escaped the way Go writes it: control characters (\x1b, \n,
// \r), invalid UTF-8 bytes (\xff), and the non-printing Unicode characters
// (bidirectional overrides such as \u202e, line separators). Profile names,
// paths and entries come from files anyone can write (a cloned repository's
// .grok/sandbox.toml, the names of its files): passed through raw, they could
// retitle or clear the terminal, or fake a line of grok-sandbox's output.
// Everything grok-sandbox prints from config or file names goes through it.
func String(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[0])|0x100, 16)[1:])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}
