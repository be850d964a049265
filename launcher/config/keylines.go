package config

import (
	"strconv"
	"strings"
)

// keyLines maps every key of a TOML document, and every element of its
// arrays, to the line it starts on, in one pass over the text: the decoder
// does not export positions, and errors and warnings must cite the line of
// the entry they are about. The document has been parsed by the decoder
// already, so this reader only needs to follow valid TOML; on anything it
// does not understand it stops, and the lines it lacks are reported as 0
// (the error then names the file and key without a line).
type keyLines map[string]int

// lineKey is how keyLines spells a key path; an array element is its key
// followed by "[i]".
func lineKey(path ...string) string { return strings.Join(path, "\x00") }

func elementKey(path []string, i int) string {
	return lineKey(path...) + "[" + strconv.Itoa(i) + "]"
}

// line is the line of path, or of the nearest enclosing key that has one.
// The TOML decoder matches a key to its field whatever its case
// ([Sandbox] profile is the default profile too), so a key not found as
// spelt is looked for in any case.
func (k keyLines) line(path ...string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := k[lineKey(path[:n]...)]; ok {
			return l
		}
		want := lineKey(path[:n]...)
		best := 0
		for key, l := range k {
			if strings.EqualFold(key, want) && (best == 0 || l < best) {
				best = l
			}
		}
		if best > 0 {
			return best
		}
	}
	return 0
}

// element is the line of the i-th element of the array at path, or the
// array's own line.
func (k keyLines) element(path []string, i int) int {
	if l, ok := k[elementKey(path, i)]; ok {
		return l
	}
	return k.line(path...)
}

func scanKeyLines(data []byte) keyLines {
	s := &tomlScanner{src: data, line: 1, out: keyLines{}}
	s.document()
	return s.out
}

type tomlScanner struct {
	src  []byte
	i    int
	line int
	out  keyLines
	bad  bool
}

func (s *tomlScanner) peek(off int) byte {
	if s.i+off < len(s.src) {
		return s.src[s.i+off]
	}
	return 0
}

func (s *tomlScanner) advance(n int) {
	for ; n > 0 && s.i < len(s.src); n-- {
		if s.src[s.i] == '\n' {
			s.line++
		}
		s.i++
	}
}

func (s *tomlScanner) hasPrefix(p string) bool {
	return len(s.src)-s.i >= len(p) && string(s.src[s.i:s.i+len(p)]) == p
}

// blank skips spaces and tabs, and with newlines also line ends and
// comments.
func (s *tomlScanner) blank(newlines bool) {
	for s.i < len(s.src) {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t':
			s.advance(1)
		case newlines && (c == '\n' || c == '\r'):
			s.advance(1)
		case newlines && c == '#':
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.advance(1)
			}
		default:
			return
		}
	}
}

func (s *tomlScanner) document() {
	var table []string
	for !s.bad {
		s.blank(true)
		if s.i >= len(s.src) {
			return
		}
		line := s.line
		if s.peek(0) == '[' {
			n := 1
			if s.peek(1) == '[' {
				n = 2
			}
			s.advance(n)
			table = s.key()
			s.blank(false)
			if s.bad || s.peek(0) != ']' {
				s.bad = true
				return
			}
			s.advance(n)
			s.record(lineKey(table...), line)
			continue
		}
		s.keyValue(table)
	}
}

// record keeps the first line a key was seen on.
func (s *tomlScanner) record(key string, line int) {
	if _, ok := s.out[key]; !ok {
		s.out[key] = line
	}
}

func (s *tomlScanner) keyValue(table []string) {
	line := s.line
	k := s.key()
	s.blank(false)
	if s.bad || s.peek(0) != '=' {
		s.bad = true
		return
	}
	s.advance(1)
	path := append(append([]string(nil), table...), k...)
	for n := len(table) + 1; n <= len(path); n++ {
		s.record(lineKey(path[:n]...), line)
	}
	s.blank(false)
	s.value(path)
}

// key reads a dotted key: bare, "basic" or 'literal' parts.
func (s *tomlScanner) key() []string {
	var parts []string
	for {
		s.blank(false)
		var part string
		switch c := s.peek(0); {
		case c == '"':
			part = s.basicString()
		case c == '\'':
			part = s.literalString()
		case isBareKeyChar(c):
			start := s.i
			for s.i < len(s.src) && isBareKeyChar(s.src[s.i]) {
				s.i++
			}
			part = string(s.src[start:s.i])
		default:
			s.bad = true
			return nil
		}
		parts = append(parts, part)
		s.blank(false)
		if s.peek(0) != '.' {
			return parts
		}
		s.advance(1)
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (s *tomlScanner) value(path []string) {
	switch c := s.peek(0); {
	case c == '"':
		s.basicString()
	case c == '\'':
		s.literalString()
	case c == '[':
		s.advance(1)
		for i := 0; !s.bad; i++ {
			s.blank(true)
			if s.peek(0) == ']' || s.i >= len(s.src) {
				s.advance(1)
				return
			}
			s.record(elementKey(path, i), s.line)
			s.value(append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"))
			s.blank(true)
			if s.peek(0) == ',' {
				s.advance(1)
			}
		}
	case c == '{':
		s.advance(1)
		for !s.bad {
			s.blank(true)
			if s.peek(0) == '}' || s.i >= len(s.src) {
				s.advance(1)
				return
			}
			s.keyValue(path)
			s.blank(true)
			if s.peek(0) == ',' {
				s.advance(1)
			}
		}
	default:
		// A number, boolean or date: up to the next delimiter.
		from := s.i
		for s.i < len(s.src) && !strings.ContainsRune(",]}\n\r#", rune(s.src[s.i])) {
			s.advance(1)
		}
		if s.i == from {
			s.bad = true // no value here: stop rather than loop
		}
	}
}

// basicString reads a "…" or """…""" string and returns its text (escapes
// decoded as far as Go's rules agree with TOML's; a key needs no more).
func (s *tomlScanner) basicString() string {
	delim := `"`
	if s.hasPrefix(`"""`) {
		delim = `"""`
	}
	s.advance(len(delim))
	start := s.i
	for s.i < len(s.src) {
		if s.src[s.i] == '\\' {
			s.advance(2)
			continue
		}
		if s.hasPrefix(delim) {
			// """ may end with up to two more quotes that belong to the text.
			for delim == `"""` && s.peek(3) == '"' {
				s.advance(1)
			}
			raw := string(s.src[start:s.i])
			s.advance(len(delim))
			if delim == `"` {
				if u, err := strconv.Unquote(`"` + raw + `"`); err == nil {
					return u
				}
			}
			return raw
		}
		s.advance(1)
	}
	s.bad = true
	return ""
}

func (s *tomlScanner) literalString() string {
	delim := `'`
	if s.hasPrefix(`'''`) {
		delim = `'''`
	}
	s.advance(len(delim))
	start := s.i
	for s.i < len(s.src) {
		if s.hasPrefix(delim) {
			for delim == `'''` && s.peek(3) == '\'' {
				s.advance(1)
			}
			raw := string(s.src[start:s.i])
			s.advance(len(delim))
			return raw
		}
		s.advance(1)
	}
	s.bad = true
	return ""
}
