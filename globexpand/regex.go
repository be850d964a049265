package globexpand

import "strings"

// Regex returns an anchored POSIX extended regular expression, ^...$, that
// matches exactly the paths Match matches, for a Seatbelt regex filter.
//
// Seatbelt regexes are byte-oriented: a bracket expression matches one byte,
// not one character. So that '?' still means one character, it becomes
// "one ASCII byte other than '/', or a byte 0xC0-0xFF followed by one or more
// bytes 0x80-0xBF", exactly the rule Match uses (see the package doc); a
// negated class is built the same way. POSIX bracket expressions have no
// escapes, so those byte ranges are written as raw bytes and the result is
// a byte string that is not valid UTF-8: write it into the profile byte for
// byte. Classes only hold ASCII, so a positive class never needs them.
//
// The literal prefix is escaped byte by byte, so a workspace named "dir[1]"
// stays literal. '.' is never used: it does not match a newline in every
// engine, and file names may contain one.
func (p Pattern) Regex() string {
	var b strings.Builder
	b.WriteByte('^')
	if !p.Glob {
		quoteMeta(&b, p.Prefix)
		b.WriteByte('$')
		return b.String()
	}
	if p.Prefix != "/" {
		quoteMeta(&b, p.Prefix)
	}
	var body strings.Builder
	onlySuper := true
	for _, seg := range p.compiled() {
		if seg.super {
			// "**" matches whole segments, none or more.
			body.WriteString("(/[^/]+)*")
			continue
		}
		onlySuper = false
		body.WriteByte('/')
		if len(seg.toks) == 1 && seg.toks[0].kind == tokenStar {
			// Names are never empty; without this "/*" would match "/".
			body.WriteString("[^/]+")
			continue
		}
		for i := range seg.toks {
			writeToken(&body, &seg.toks[i])
		}
	}
	if p.Prefix == "/" && onlySuper {
		// The body can be empty, and "/" itself must still match.
		b.WriteString("(/|" + body.String() + ")")
	} else {
		b.WriteString(body.String())
	}
	b.WriteByte('$')
	return b.String()
}

func quoteMeta(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`.[](){}*+?^$|\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

const (
	multiByte = "[\xc0-\xff][\x80-\xbf]+"
	highBytes = "\x80-\xff"
)

func writeToken(b *strings.Builder, t *token) {
	switch t.kind {
	case tokenLiteral:
		quoteMeta(b, t.lit)
	case tokenStar:
		b.WriteString("[^/]*")
	case tokenChar:
		if !t.multi {
			b.WriteString(positiveBracket(t.ascii))
			return
		}
		// The ASCII bytes not accepted ('/' among them) and every
		// non-ASCII byte are excluded from the first alternative.
		var out [2]uint64
		for c := byte(1); c < 128; c++ {
			if !t.has(c) {
				out[c>>6] |= 1 << (c & 63)
			}
		}
		b.WriteString("([^" + bracketItems(out, highBytes) + "]|" + multiByte + ")")
	}
}

func positiveBracket(set [2]uint64) string {
	items := bracketItems(set, "")
	switch {
	case items == "^":
		return `\^`
	case items == "^-":
		return "[-^]"
	}
	return "[" + items + "]"
}

// bracketItems lists set inside a bracket expression so that POSIX and Go
// both read every item literally: ']' first, '-' last, '^' after something
// else, '[' never before ':', '.' or '=', and the backslash written twice
// (POSIX lists it twice, Go reads an escaped backslash). Ranges are used
// only for runs of at least three other characters, so no range ever has a
// special character as an end point. extra is written just before a '-'.
func bracketItems(set [2]uint64, extra string) string {
	has := func(c byte) bool { return c < 128 && set[c>>6]&(1<<(c&63)) != 0 }
	special := func(c byte) bool { return strings.IndexByte(`]\[^-`, c) >= 0 }
	var b strings.Builder
	if has(']') {
		b.WriteByte(']')
	}
	for c := 1; c < 128; {
		if !has(byte(c)) || special(byte(c)) {
			c++
			continue
		}
		end := c
		for end+1 < 128 && has(byte(end+1)) && !special(byte(end+1)) {
			end++
		}
		if end-c >= 2 {
			b.WriteString(string(rune(c)) + "-" + string(rune(end)))
		} else {
			for d := c; d <= end; d++ {
				b.WriteByte(byte(d))
			}
		}
		c = end + 1
	}
	if has('\\') {
		b.WriteString(`\\`)
	}
	if has('[') {
		b.WriteByte('[')
	}
	if has('^') {
		b.WriteByte('^')
	}
	b.WriteString(extra)
	if has('-') {
		b.WriteByte('-')
	}
	return b.String()
}
