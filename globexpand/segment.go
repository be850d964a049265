package globexpand

import (
	"fmt"
	"strings"
)

// The matcher is our own rather than github.com/gobwas/glob. gobwas was the
// plan, but glob v0.2.3 misreads the cases a deny list cannot afford
// (pinned in quirks_test.go): a segment without '*' is compiled into a
// "row" matcher that slices multi-byte characters, so "?.pem" does not match
// "ü.pem" and "[ü]b" does not match "üb" (a silent false negative); a class
// holds one range or one list, so "[ab-d]" is read as {a, b, -, d} and
// "[a-cx-z]" fails; "[a-]" fails; "[^a]" is not a negation; and a pattern
// containing U+FFFD cannot be compiled. Translating around all of that would
// be bigger than this file, which is a plain NFA over bytes that mirrors the
// regular expression of Regex token for token.

type tokenKind uint8

const (
	tokenLiteral tokenKind = iota // lit, byte for byte
	tokenStar                     // '*': any bytes, never '/'
	tokenChar                     // '?' or a class: one character
)

type token struct {
	kind tokenKind
	lit  string
	// ascii holds the ASCII bytes a tokenChar accepts ('/' and NUL never).
	ascii [2]uint64
	// multi: a tokenChar also accepts one multi-byte character, that is a
	// byte 0xC0-0xFF followed by one or more bytes 0x80-0xBF.
	multi bool
}

// segment matches one path segment; super is a whole-segment "**".
type segment struct {
	super bool
	toks  []token
}

func (t *token) has(c byte) bool { return c < 128 && t.ascii[c>>6]&(1<<(c&63)) != 0 }
func (t *token) add(c byte)      { t.ascii[c>>6] |= 1 << (c & 63) }

// anyChar is '?'; a negated class starts from it and removes its members.
func anyChar() token {
	t := token{kind: tokenChar, multi: true}
	for c := byte(1); c < 128; c++ {
		if c != '/' {
			t.add(c)
		}
	}
	return t
}

// compile turns the "/"-separated glob text into segments. Literal
// segments come out as a single literal token.
func compile(s string) ([]segment, error) {
	var segs []segment
	var seg segment
	var lit strings.Builder
	segStart := 0
	flush := func() {
		if lit.Len() > 0 {
			seg.toks = append(seg.toks, token{kind: tokenLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	endSegment := func(i int) error {
		flush()
		switch name := s[segStart:i]; {
		case name == "" && i == len(s):
			return fmt.Errorf(`trailing "/"; remove it (denying a directory covers its contents)`)
		case name == "":
			return fmt.Errorf(`empty path segment ("//"); remove the extra "/"`)
		case name == "." || name == "..":
			return fmt.Errorf(`%q segments are not allowed; write the path without them`, name)
		}
		segs = append(segs, seg)
		seg = segment{}
		segStart = i + 1
		return nil
	}
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '/':
			if err := endSegment(i); err != nil {
				return nil, err
			}
			i++
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				if i != segStart || (i+2 < len(s) && s[i+2] != '/') {
					return nil, fmt.Errorf(`"**" must be a whole path segment (as in a/**/b); use a single * within a name`)
				}
				seg.super = true
				i += 2
				continue
			}
			flush()
			seg.toks = append(seg.toks, token{kind: tokenStar})
			i++
		case '?':
			flush()
			seg.toks = append(seg.toks, anyChar())
			i++
		case '[':
			flush()
			t, n, err := parseClass(s[i:])
			if err != nil {
				return nil, err
			}
			seg.toks = append(seg.toks, t)
			i += n
		default:
			lit.WriteByte(c)
			i++
		}
	}
	if err := endSegment(len(s)); err != nil {
		return nil, err
	}
	return segs, nil
}

// parseClass parses the class at the start of s and returns its length.
func parseClass(s string) (token, int, error) {
	t := token{kind: tokenChar}
	i := 1
	neg := i < len(s) && (s[i] == '!' || s[i] == '^')
	if neg {
		i++
	}
	if i < len(s) && s[i] == ']' {
		return t, 0, fmt.Errorf(`a class cannot be empty or start with "]"; match a literal "]" outside the class`)
	}
	member := func(j int) error {
		switch c := s[j]; {
		case c == '/':
			return fmt.Errorf(`a class never matches "/"; write the path segments out instead`)
		case c >= 0x80:
			return fmt.Errorf(`only ASCII characters are supported inside [...]; use ? or list the names as separate entries`)
		case c == '[' && j+1 < len(s) && strings.IndexByte(":.=", s[j+1]) >= 0:
			return fmt.Errorf(`POSIX bracket forms like [[:alpha:]] are not supported; use a range such as [a-z]`)
		}
		return nil
	}
	for i < len(s) {
		if s[i] == ']' {
			if neg {
				ac := anyChar()
				ac.ascii[0] &^= t.ascii[0]
				ac.ascii[1] &^= t.ascii[1]
				t = ac
			}
			return t, i + 1, nil
		}
		if err := member(i); err != nil {
			return t, 0, err
		}
		lo, hi := s[i], s[i]
		if i+2 < len(s) && s[i+1] == '-' && s[i+2] != ']' {
			if err := member(i + 2); err != nil {
				return t, 0, err
			}
			hi = s[i+2]
			if hi < lo {
				return t, 0, fmt.Errorf("range %q is reversed; write %q", s[i:i+3], string([]byte{hi, '-', lo}))
			}
			i += 3
			if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
				return t, 0, fmt.Errorf(`ambiguous "-" after a range; put a literal "-" first or last in the class`)
			}
		} else {
			i++
		}
		for c := lo; ; c++ {
			if c != '/' {
				t.add(c)
			}
			if c == hi {
				break
			}
		}
	}
	return t, 0, fmt.Errorf(`unclosed "["; close the class, or write "[[]" to match a literal "["`)
}

// match reports whether the segment matches name. It tracks the set of
// offsets in name that the tokens so far can end at, which is linear in
// len(name) per token and never backtracks.
func (seg *segment) match(name string) bool {
	if seg.super {
		return true
	}
	if len(seg.toks) == 1 && seg.toks[0].kind == tokenLiteral {
		return name == seg.toks[0].lit
	}
	var buf [2][256]bool
	cur, next := buf[0][:0], buf[1][:0]
	if len(name) >= len(buf[0]) {
		cur, next = make([]bool, 0, len(name)+1), make([]bool, 0, len(name)+1)
	}
	cur = cur[:len(name)+1]
	next = next[:len(name)+1]
	clear(cur)
	cur[0] = true
	for ti := range seg.toks {
		t := &seg.toks[ti]
		clear(next)
		alive := false
		for i, ok := range cur {
			if !ok {
				continue
			}
			switch t.kind {
			case tokenStar:
				for j := i; j <= len(name); j++ {
					next[j] = true
				}
				alive = true
			case tokenLiteral:
				if strings.HasPrefix(name[i:], t.lit) {
					next[i+len(t.lit)] = true
					alive = true
				}
			case tokenChar:
				if i == len(name) {
					break
				}
				if c := name[i]; c < 0x80 {
					if t.has(c) {
						next[i+1] = true
						alive = true
					}
				} else if c >= 0xC0 && t.multi {
					for j := i + 1; j < len(name) && name[j]&0xC0 == 0x80; j++ {
						next[j+1] = true
						alive = true
					}
				}
			}
			if t.kind == tokenStar {
				break
			}
		}
		if !alive {
			return false
		}
		cur, next = next, cur
	}
	return cur[len(name)]
}

// The glob is a state machine over whole segments: bit i of a state set
// means "segments before i have matched". Bit len(segs) means a match.

func final(segs []segment) uint64 { return 1 << len(segs) }

func start(segs []segment) uint64 { return closure(segs, 1) }

// closure lets every "**" in the set also match no segment at all.
func closure(segs []segment, st uint64) uint64 {
	for i := range segs {
		if st&(1<<i) != 0 && segs[i].super {
			st |= 1 << (i + 1)
		}
	}
	return st
}

// step consumes one path segment.
func step(segs []segment, st uint64, name string) uint64 {
	var next uint64
	for i := range segs {
		if st&(1<<i) == 0 {
			continue
		}
		if segs[i].super {
			next |= 1 << i
		} else if segs[i].match(name) {
			next |= 1 << (i + 1)
		}
	}
	return closure(segs, next)
}
