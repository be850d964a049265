// Package globexpand parses the deny entries of a grok-sandbox config and
// expands them into the concrete paths the kernel must hide.
//
// A deny entry that is accepted but means something other than what the
// user wrote is a hole in the sandbox, so everything here fails closed: any
// syntax that is not listed below is refused with an error instead of being
// guessed at, and a walk that cannot see everything stops with an error
// instead of returning a partial list.
//
// # Syntax (grok-sandbox help deny)
//
// An entry is a glob if it contains '*', '?' or '['; those characters always
// mean glob and there is no way to escape them (a literal '[' is written
// "[[]"). The supported subset of gitignore syntax:
//
//   - '*' matches any run of characters within one path segment; it never
//     matches '/'. It matches names starting with '.', as everything counts.
//   - '?' matches exactly one character within a segment (see Unicode below).
//   - "**" as a whole segment matches any number of directories, including
//     none: "**/.env" matches ".env" and "sub/.env". A trailing "/**" matches
//     everything below its directory and, deliberately, the directory itself:
//     "secrets/**" denies "secrets" too. Denying more than asked is the
//     fail-closed reading; hiding the directory hides its contents anyway.
//   - "[abc]", "[a-z]", and "[!a]" or "[^a]" for the negation. Classes hold
//     ASCII characters only and never match '/', positive or negated. A ']'
//     always closes a class; outside a class it is an ordinary character, so
//     "[ab]]" is the class [ab] followed by a literal ']'.
//
// Refused in every entry, glob or not: the empty string, leading or trailing
// white space (it is part of the name, and trimming it would deny a different
// file), NUL bytes, invalid UTF-8, '{' and '}', '\', empty segments ("//" or a
// trailing '/'), "." and ".." segments, "~user", and "/" itself. Refused in
// globs: "**" that is not a whole segment, an unclosed '[', a class that is
// empty or starts with ']', POSIX forms such as "[[:alpha:]]", reversed
// ranges, '/' or non-ASCII characters inside a class, and more than 63
// segments after the literal prefix.
//
// # Anchoring
//
// "~" and a leading "~/" name the home directory. Other relative entries are
// anchored at the workspace and match only inside it, so "*.pem" matches
// top-level files of the workspace and nothing else. An absolute glob is
// anchored at its literal prefix, the leading segments without glob
// characters. The workspace and home directories are always taken literally
// even if their names contain '[' or '*': the literal prefix and the glob
// part are kept apart and never joined into one pattern.
//
// # Unicode
//
// Matching works on bytes. '?' and negated classes match one ASCII byte other
// than '/', or one byte 0xC0-0xFF followed by one or more bytes 0x80-0xBF.
// On valid UTF-8 that is exactly one character. In a name that is not valid
// UTF-8 (a Latin-1 "\xe9", say), the stray bytes can be matched only by '*',
// so "?.pem" does not match "\xe9.pem" while "*.pem" does. Regex produces the
// same byte language, which is what Seatbelt needs.
package globexpand

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is one validated deny entry, anchored to an absolute path.
//
// Build Patterns with Parse, which also compiles the glob. A Pattern built
// by hand is compiled on use instead: Expand returns an error for an invalid
// one, and Match, CouldMatchUnder and Regex panic rather than quietly match
// nothing.
type Pattern struct {
	Entry  string // the entry as the user wrote it
	Glob   bool   // false: Path is an exact path
	Prefix string // absolute, cleaned literal directory where matching/walking starts (for a literal entry: the path itself)
	Rest   string // the glob part relative to Prefix, segments separated by "/" ("" for literal entries)

	segs []segment
}

// maxSegments keeps a glob's match state in one uint64 bit set. No real deny
// entry comes near it.
const maxSegments = 63

// Parse validates entry and anchors it: relative entries at workspace, "~"
// at home. workspace and home must be absolute and clean; they are needed
// only by entries that use them, so an unknown home does not break a config
// that never says "~".
func Parse(entry, workspace, home string) (Pattern, error) {
	if err := checkEntry(entry); err != nil {
		return Pattern{}, err
	}

	var base, rel, baseName string
	switch {
	case entry == "~":
		base, baseName = home, "home directory"
	case strings.HasPrefix(entry, "~/"):
		base, rel, baseName = home, entry[2:], "home directory"
		if rel == "" {
			return Pattern{}, entryError(entry, `trailing "/"; write "~"`)
		}
	case entry[0] == '~':
		return Pattern{}, entryError(entry, `only "~" and "~/..." are supported; write the other user's home directory out in full`)
	case entry[0] == '/':
		if entry == "/" {
			return Pattern{}, entryError(entry, "denying / would deny everything; name a directory below it")
		}
		base, rel = "/", entry[1:]
	default:
		base, rel, baseName = workspace, entry, "workspace"
	}
	if !filepath.IsAbs(base) || filepath.Clean(base) != base {
		return Pattern{}, entryError(entry, fmt.Sprintf("the %s %q is not an absolute, clean path", baseName, base))
	}

	p := Pattern{Entry: entry, Glob: strings.ContainsAny(entry, "*?[")}
	if rel == "" { // "~"
		p.Prefix = base
		return p, nil
	}
	// A '/' inside a class would make splitting on '/' wrong; compile
	// reports that before anything relies on the split.
	segs, err := compile(rel)
	if err != nil {
		return Pattern{}, entryError(entry, err.Error())
	}
	names := strings.Split(rel, "/")
	i := 0
	for i < len(names) && !strings.ContainsAny(names[i], "*?[") {
		i++
	}
	p.Prefix = joinPath(base, names[:i])
	if !p.Glob {
		return p, nil
	}
	p.Rest = strings.Join(names[i:], "/")
	p.segs = segs[i:]
	if len(p.segs) > maxSegments {
		return Pattern{}, entryError(entry, fmt.Sprintf("more than %d segments after the literal prefix; deny a parent directory instead", maxSegments))
	}
	return p, nil
}

func entryError(entry, reason string) error {
	return fmt.Errorf("deny entry %q: %s", entry, reason)
}

// checkEntry applies the rules shared by every entry, glob or not.
func checkEntry(entry string) error {
	if entry == "" {
		return entryError(entry, "empty entry; remove it")
	}
	first, _ := utf8.DecodeRuneInString(entry)
	last, _ := utf8.DecodeLastRuneInString(entry)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return entryError(entry, "leading or trailing white space is part of the path and is never trimmed; remove it")
	}
	if reason := badChars(entry); reason != "" {
		return entryError(entry, reason)
	}
	return nil
}

// badChars returns why s contains a character no entry may contain.
func badChars(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL byte, which no path can contain"
	}
	if strings.ContainsAny(s, "{}") {
		return "brace alternation {...} is not supported; list each alternative as a separate entry"
	}
	if strings.ContainsRune(s, '\\') {
		return "backslash escapes are not supported; deny a parent directory or list entries separately"
	}
	return ""
}

func joinPath(base string, names []string) string {
	if len(names) == 0 {
		return base
	}
	if base == "/" {
		return "/" + strings.Join(names, "/")
	}
	return base + "/" + strings.Join(names, "/")
}

// Path returns the path the pattern names, for display.
func (p Pattern) Path() string {
	if !p.Glob {
		return p.Prefix
	}
	return joinPath(p.Prefix, []string{p.Rest})
}

// compiled returns the segments of the glob part. A Pattern that did not
// come from Parse is compiled here; an invalid one panics rather than
// silently matching nothing.
func (p Pattern) compiled() []segment {
	if p.segs != nil || !p.Glob {
		return p.segs
	}
	segs, err := p.compile()
	if err != nil {
		panic("globexpand: " + err.Error())
	}
	return segs
}

func (p Pattern) compile() ([]segment, error) {
	if !filepath.IsAbs(p.Prefix) || filepath.Clean(p.Prefix) != p.Prefix {
		return nil, entryError(p.Entry, fmt.Sprintf("prefix %q is not an absolute, clean path", p.Prefix))
	}
	if !p.Glob {
		return nil, nil
	}
	if reason := badChars(p.Rest); reason != "" {
		return nil, entryError(p.Entry, reason)
	}
	segs, err := compile(p.Rest)
	if err != nil {
		return nil, entryError(p.Entry, err.Error())
	}
	if len(segs) > maxSegments {
		return nil, entryError(p.Entry, "too many segments")
	}
	return segs, nil
}

// Match reports whether the pattern matches exactly path, which must be
// absolute and clean. It does not look at the file system.
func (p Pattern) Match(path string) bool {
	if !p.Glob {
		return path == p.Prefix
	}
	rel, ok := relative(path, p.Prefix)
	if !ok {
		return false
	}
	segs := p.compiled()
	return run(segs, start(segs), rel)&final(segs) != 0
}

// CouldMatchUnder reports whether anything at or below dir can match. A
// false answer lets a walk skip dir, so it must never be false when a match
// is possible.
func (p Pattern) CouldMatchUnder(dir string) bool {
	if p.Prefix == dir || under(p.Prefix, dir) {
		return true
	}
	if !p.Glob {
		return false
	}
	rel, ok := relative(dir, p.Prefix)
	if !ok {
		return false
	}
	segs := p.compiled()
	return run(segs, start(segs), rel) != 0
}

// relative returns path relative to prefix, "" for prefix itself.
func relative(path, prefix string) (string, bool) {
	if path == prefix {
		return "", true
	}
	if under(path, prefix) {
		if prefix == "/" {
			return path[1:], true
		}
		return path[len(prefix)+1:], true
	}
	return "", false
}

// under reports whether path is strictly below dir.
func under(path, dir string) bool {
	if dir == "/" {
		return len(path) > 1 && path[0] == '/'
	}
	return len(path) > len(dir)+1 && path[len(dir)] == '/' && strings.HasPrefix(path, dir)
}

// run feeds the "/"-separated names of rel through the state machine.
func run(segs []segment, st uint64, rel string) uint64 {
	for rel != "" && st != 0 {
		name, tail, _ := strings.Cut(rel, "/")
		st = step(segs, st, name)
		rel = tail
	}
	return st
}
