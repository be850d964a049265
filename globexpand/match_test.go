package globexpand

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		entry, ws, path string
		want            bool
	}{
		{"**/.env", "", "/ws/.env", true},
		{"**/.env", "", "/ws/a/.env", true},
		{"**/.env", "", "/ws/a/b/.env", true},
		{"**/.env", "", "/ws/a/x.env", false},
		{"**/.env", "", "/ws/.envx", false},
		{"**/.env", "", "/ws/a/.env/x", false},
		{"**/.env", "", "/.env", false},
		{"**/.env", "", "/wsx/.env", false},
		{".env", "", "/ws/.env", true},
		{".env", "", "/ws/a/.env", false},
		{"*.pem", "", "/ws/a.pem", true},
		{"*.pem", "", "/ws/.pem", true},
		{"*.pem", "", "/ws/a/b.pem", false}, // relative *.pem is top level only
		{"*.pem", "", "/ws", false},
		{"*.pem", "", "/a.pem", false},
		{"*", "", "/ws/.hidden", true},
		{"*", "", "/ws", false},
		{"a/**", "", "/ws/a", true},
		{"a/**", "", "/ws/a/b", true},
		{"a/**", "", "/ws/a/b/c", true},
		{"a/**", "", "/ws/ab", false},
		{"a/**", "", "/ws", false},
		{"a/**/b", "", "/ws/a/b", true},
		{"a/**/b", "", "/ws/a/x/b", true},
		{"a/**/b", "", "/ws/a/x/y/b", true},
		{"a/**/b", "", "/ws/a/xb", false},
		{"a/**/b", "", "/ws/a/b/c", false},
		{"a/**/b", "", "/ws/b", false},
		{"a/**/**/b", "", "/ws/a/b", true},
		{"a/**/**", "", "/ws/a", true},
		{"**", "", "/ws", true},
		{"**", "", "/ws/a/b", true},
		{"**", "", "/", false},
		{"/**/x", "", "/x", true},
		{"/**/x", "", "/a/b/x", true},
		{"/**/x", "", "/", false},
		{"/**", "", "/", true},
		{"/**", "", "/a", true},
		{"/*", "", "/a", true},
		{"/*", "", "/", false},
		{"/home/**/.ssh", "", "/home/u/.ssh", true},
		{"/home/**/.ssh", "", "/home/.ssh", true},
		{"/home/**/.ssh", "", "/homex/.ssh", false},
		{"/t/[a-c]x", "", "/t/bx", true},
		{"/t/[a-c]x", "", "/t/dx", false},
		{"/t/[a-c]x", "", "/t/x", false},
		{"/t/[a-c]x", "", "/x", false},
		{"/t/a[!b]c", "", "/t/a/c", false}, // classes never match '/'
		{"/t/a[!b]c", "", "/t/axc", true},
		{"/t/a[!b]c", "", "/t/abc", false},
		{"/t/a[.-0]c", "", "/t/a/c", false}, // range spanning '/'
		{"/t/a[.-0]c", "", "/t/a.c", true},
		{"/t/a[.-0]c", "", "/t/a0c", true},
		{"/t/a?c", "", "/t/a/c", false},
		{"/t/a*c", "", "/t/a/c", false},
		{"/t/a*c", "", "/t/abbc", true},
		{"[^a]", "", "/ws/a", false},
		{"[^a]", "", "/ws/b", true},
		{"[^a]", "", "/ws/^", true},
		{"[^a]", "", "/ws/ü", true},
		{"[!a]", "", "/ws/ü", true},
		{"[a-z]", "", "/ws/ü", false},
		{"[ab]]", "", "/ws/a]", true},
		{"[ab]]", "", "/ws/a", false},
		{"[ab]]", "", "/ws/]", false},
		{"a]", "", "/ws/a]", true},
		{"[-a]", "", "/ws/-", true},
		{"[a-]", "", "/ws/-", true},
		{"[a-]", "", "/ws/b", false},
		{"[!-]", "", "/ws/-", false},
		{"[?*]x", "", "/ws/?x", true},
		{"[?*]x", "", "/ws/ax", false},
		{"dir[[]1]", "", "/ws/dir[1]", true},
		{"dir[[]1]", "", "/ws/dir1", false},
		{"my file.txt", "", "/ws/my file.txt", true},
		{"my file.txt", "", "/ws/myfile.txt", false},
		{"ü*.txt", "", "/ws/über.txt", true},
		{"ü*.txt", "", "/ws/u.txt", false},
		{"?.txt", "", "/ws/ü.txt", true},   // 2 bytes
		{"?.txt", "", "/ws/中.txt", true},   // 3 bytes
		{"?.txt", "", "/ws/😀.txt", true},   // 4 bytes
		{"?.txt", "", "/ws/üü.txt", false}, // two characters
		{"??.txt", "", "/ws/ü.txt", false},
		{"?b", "", "/ws/üb", true},
		{"ü?", "", "/ws/üx", true},
		{"*?", "", "/ws/ü", true},
		{"?.pem", "", "/ws/\xe9.pem", false}, // not UTF-8: only * matches it
		{"*.pem", "", "/ws/\xe9.pem", true},
		{"[!a].pem", "", "/ws/\xe9.pem", false},
		{"*.pem", "/tmp/dir[1]", "/tmp/dir[1]/k.pem", true},
		{"*.pem", "/tmp/dir[1]", "/tmp/dir1/k.pem", false},
		{"*.pem", "/tmp/dir[1]", "/tmp/dir[1]", false},
		{"~/.ssh/*", "", "/home/u/.ssh/id", true},
		{"~", "", "/home/u", true},
		{"~", "", "/home/u/x", false},
		{"/etc/passwd", "", "/etc/passwd", true},
		{"/etc/passwd", "", "/etc/passwd/x", false},
	}
	for _, tt := range tests {
		ws := tt.ws
		if ws == "" {
			ws = testWS
		}
		p, err := Parse(tt.entry, ws, testHome)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.entry, err)
			continue
		}
		if got := p.Match(tt.path); got != tt.want {
			t.Errorf("Parse(%q, %q).Match(%q) = %v, want %v", tt.entry, ws, tt.path, got, tt.want)
		}
		if got := regexMatch(t, p, tt.path); got != tt.want {
			t.Errorf("Parse(%q, %q).Regex() = %q on %q: %v, want %v", tt.entry, ws, p.Regex(), tt.path, got, tt.want)
		}
		if utf8.ValidString(tt.path) {
			if got := refPatternMatch(p, tt.path); got != tt.want {
				t.Errorf("reference matcher for %q on %q = %v, want %v (the test is wrong)", tt.entry, tt.path, got, tt.want)
			}
		}
	}
}

func TestCouldMatchUnder(t *testing.T) {
	tests := []struct {
		entry, dir string
		want       bool
	}{
		{"certs/**/*.pem", "/ws/certs", true},
		{"certs/**/*.pem", "/ws/certs/a/b", true},
		{"certs/**/*.pem", "/ws", true},
		{"certs/**/*.pem", "/", true},
		{"certs/**/*.pem", "/ws/other", false},
		{"certs/**/*.pem", "/wsx", false},
		{"c*/x/*.pem", "/ws/certs", true},
		{"c*/x/*.pem", "/ws/big", false},
		{"c*/x/*.pem", "/ws/certs/y", false},
		{"c*/x/*.pem", "/ws/certs/x", true},
		{"c*/x/*.pem", "/ws/certs/x/a.pem", true}, // at dir itself
		{"c*/x/*.pem", "/ws/certs/x/a.pem/z", false},
		{"*.pem", "/ws/sub", false},
		{"**/.env", "/ws/a/b/c", true},
		{"secrets/**", "/ws/secrets/a/b", true},
		{"/etc/passwd", "/etc", true},
		{"/etc/passwd", "/etc/passwd", true},
		{"/etc/passwd", "/etc/passwd/x", false},
		{"/etc/passwd", "/usr", false},
	}
	for _, tt := range tests {
		p, err := Parse(tt.entry, testWS, testHome)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.CouldMatchUnder(tt.dir); got != tt.want {
			t.Errorf("Parse(%q).CouldMatchUnder(%q) = %v, want %v", tt.entry, tt.dir, got, tt.want)
		}
	}
}

func TestRegexText(t *testing.T) {
	tests := []struct{ entry, ws, re string }{
		{"*.pem", testWS, `^/ws/[^/]*\.pem$`},
		{"/*", testWS, `^/[^/]+$`},
		{"**/.env", testWS, `^/ws(/[^/]+)*/\.env$`},
		{"a/**", testWS, `^/ws/a(/[^/]+)*$`},
		{"/**/x", testWS, `^(/[^/]+)*/x$`},
		{"/**", testWS, `^(/|(/[^/]+)*)$`},
		{"x", "/tmp/dir[1]", `^/tmp/dir\[1\]/x$`},
		{"a.(b)+{c}|$^", "/w", ""}, // refused: braces
		{"a.(b)+|$^]", "/w", `^/w/a\.\(b\)\+\|\$\^\]$`},
		{"[.-0]", testWS, `^/ws/[.0]$`},
		{"[a-e]", testWS, `^/ws/[a-e]$`},
		{"[ab-]", testWS, `^/ws/[ab-]$`},
		{"[]^[-]]", testWS, ""}, // refused: ']' first
		{"[-^]", testWS, `^/ws/[-^]$`},
		{"[^^]", testWS, "^/ws/([^/^\x80-\xff]|[\xc0-\xff][\x80-\xbf]+)$"},
		{"?", testWS, "^/ws/([^/\x80-\xff]|[\xc0-\xff][\x80-\xbf]+)$"},
	}
	for _, tt := range tests {
		p, err := Parse(tt.entry, tt.ws, testHome)
		if tt.re == "" {
			if err == nil {
				t.Errorf("Parse(%q) accepted", tt.entry)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.entry, err)
			continue
		}
		if got := p.Regex(); got != tt.re {
			t.Errorf("Parse(%q).Regex() = %q, want %q", tt.entry, got, tt.re)
		}
	}
}

// Every ASCII set a class can produce must be read back as exactly that set,
// with the special characters ] \ [ ^ - in every position.
func TestBracketItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []byte(`]\[^-:.=`)
	for n := 0; n < 3000; n++ {
		var set [2]uint64
		k := 1 + rng.IntN(6)
		for range k {
			var c byte
			if rng.IntN(2) == 0 {
				c = specials[rng.IntN(len(specials))]
			} else {
				c = byte(1 + rng.IntN(127))
			}
			if c != '/' {
				set[c>>6] |= 1 << (c & 63)
			}
		}
		if n%10 == 0 { // long runs too
			lo := 1 + rng.IntN(120)
			for c := lo; c < lo+rng.IntN(40) && c < 128; c++ {
				if c != '/' {
					set[c>>6] |= 1 << (c & 63)
				}
			}
		}
		if set == [2]uint64{} {
			continue
		}
		tok := token{kind: tokenChar, ascii: set, multi: n%2 == 0}
		var b strings.Builder
		writeToken(&b, &tok)
		re, err := regexp.Compile("^" + latin1(b.String()) + "$")
		if err != nil {
			t.Fatalf("set %v: %q: %v", set, b.String(), err)
		}
		for c := 1; c < 128; c++ {
			if got, want := re.MatchString(string(rune(c))), tok.has(byte(c)); got != want {
				t.Fatalf("bracket %q on %q = %v, want %v", b.String(), string(rune(c)), got, want)
			}
		}
		for _, s := range []string{"ü", "中", "\xc3", "\xbc", "üü"} {
			want := tok.multi && utf8.RuneCountInString(s) == 1 && s != "\xc3" && s != "\xbc"
			if got := re.MatchString(latin1(s)); got != want {
				t.Fatalf("bracket %q on %q = %v, want %v", b.String(), s, got, want)
			}
		}
	}
}

// latin1 turns every byte into one rune, so Go's regexp, which works on
// characters, sees the bytes Seatbelt sees.
func latin1(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

func regexMatch(t testing.TB, p Pattern, path string) bool {
	t.Helper()
	re, err := regexp.Compile(latin1(p.Regex()))
	if err != nil {
		t.Fatalf("Parse(%q).Regex() = %q does not compile: %v", p.Entry, p.Regex(), err)
	}
	return re.MatchString(latin1(path))
}

// refPatternMatch is the reference: the anchoring done by hand and the glob
// part matched by refMatch.
func refPatternMatch(p Pattern, path string) bool {
	if !p.Glob {
		return path == p.Prefix
	}
	var rel string
	switch {
	case path == p.Prefix:
		// The prefix itself is no segment: only "**"s match it.
		return allTrailingSuper([]rune(p.Rest))
	case p.Prefix == "/" && strings.HasPrefix(path, "/"):
		rel = path[1:]
	case strings.HasPrefix(path, p.Prefix+"/"):
		rel = path[len(p.Prefix)+1:]
	default:
		return false
	}
	return refMatch([]rune(p.Rest), []rune(rel), true)
}

// refMatch is a deliberately naive backtracking matcher over runes, written
// from `grok-sandbox help deny` without looking at the real one. rel is "" for the prefix
// itself. It assumes the pattern was accepted by Parse.
func refMatch(p, s []rune, segStart bool) bool {
	if len(s) == 0 && allTrailingSuper(p) {
		return true // "a/**" matches "a", "**" matches the prefix
	}
	if segStart && len(p) >= 2 && p[0] == '*' && p[1] == '*' {
		if len(p) == 2 {
			return true
		}
		if refMatch(p[3:], s, true) {
			return true
		}
		for i, r := range s {
			if r == '/' {
				return refMatch(p, s[i+1:], true)
			}
		}
		return false
	}
	if len(p) == 0 {
		return len(s) == 0
	}
	switch p[0] {
	case '/':
		return len(s) > 0 && s[0] == '/' && refMatch(p[1:], s[1:], true)
	case '*':
		for i := 0; ; i++ {
			if refMatch(p[1:], s[i:], false) {
				return true
			}
			if i == len(s) || s[i] == '/' {
				return false
			}
		}
	case '?':
		return len(s) > 0 && s[0] != '/' && refMatch(p[1:], s[1:], false)
	case '[':
		in, n := refClass(p)
		return len(s) > 0 && s[0] != '/' && in(s[0]) && refMatch(p[n:], s[1:], false)
	}
	return len(s) > 0 && s[0] == p[0] && refMatch(p[1:], s[1:], false)
}

// allTrailingSuper reports whether p is "" or "/**" repeated, or "**"
// followed by that.
func allTrailingSuper(p []rune) bool {
	s := string(p)
	s = strings.TrimPrefix(s, "**")
	for strings.HasPrefix(s, "/**") {
		s = s[3:]
	}
	return s == "" && len(p) > 0
}

func refClass(p []rune) (func(rune) bool, int) {
	i := 1
	neg := p[i] == '!' || p[i] == '^'
	if neg {
		i++
	}
	type span struct{ lo, hi rune }
	var spans []span
	for p[i] != ']' {
		if i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
			spans = append(spans, span{p[i], p[i+2]})
			i += 3
		} else {
			spans = append(spans, span{p[i], p[i]})
			i++
		}
	}
	return func(r rune) bool {
		in := false
		for _, s := range spans {
			in = in || (s.lo <= r && r <= s.hi)
		}
		return in != neg
	}, i + 1
}

var (
	patternAtoms = []string{"a", "b", "/", "*", "?", "[a-b]", "[!a]", "[^b]", "**", "ü", ".", "]",
		"[[]", "[!^-]", "[ -~]", "[!!-.]", "[-^]", "[*-.]"}
	nameAtoms = []string{"a", "b", "ab", "ba", "aa", "ü", "aü", "中", ".a", "]", "bb", "[", "^", "-", "\\", "a b"}
)

func randomPattern(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(7) {
		b.WriteString(patternAtoms[rng.IntN(len(patternAtoms))])
	}
	return b.String()
}

func randomPath(rng *rand.Rand, prefix string) string {
	path := prefix
	for range rng.IntN(5) {
		path = filepath.Join(path, nameAtoms[rng.IntN(len(nameAtoms))])
	}
	return path
}

// TestCrossCheck compares Match with the reference and with Regex on random
// patterns and paths, and checks that CouldMatchUnder never prunes a match.
func TestCrossCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	n := 0
	for n < 1500 {
		entry := randomPattern(rng)
		if rng.IntN(4) == 0 {
			entry = "/" + entry
		}
		p, err := Parse(entry, testWS, testHome)
		if err != nil {
			continue
		}
		n++
		re, err := regexp.Compile(latin1(p.Regex()))
		if err != nil {
			t.Fatalf("Parse(%q).Regex() = %q: %v", entry, p.Regex(), err)
		}
		for range 40 {
			base := testWS
			if rng.IntN(5) == 0 {
				base = "/"
			}
			path := randomPath(rng, base)
			got := p.Match(path)
			if want := refPatternMatch(p, path); got != want {
				t.Fatalf("Parse(%q).Match(%q) = %v, reference says %v", entry, path, got, want)
			}
			if rg := re.MatchString(latin1(path)); rg != got {
				t.Fatalf("Parse(%q): Match(%q) = %v but Regex %q says %v", entry, path, got, p.Regex(), rg)
			}
			if got {
				for d := path; ; d = filepath.Dir(d) {
					if !p.CouldMatchUnder(d) {
						t.Fatalf("Parse(%q).CouldMatchUnder(%q) = false but it matches %q", entry, d, path)
					}
					if d == "/" {
						break
					}
				}
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"*.pem", "**/.env", "a/**", "[!a]x", "[^/]", "[]a]", "a]", "~/x", "~bob", "/**",
		"a//b", " x", "{a,b}", "[a-c-e]", "dir[[]1]", "ü?", "[.-0]", "**/**", "a/./b", "\\", "/"} {
		f.Add(s)
	}
	const ws = "/w[1]s"
	f.Fuzz(func(t *testing.T, entry string) {
		p, err := Parse(entry, ws, testHome)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.Contains(msg, "deny entry ") {
				t.Fatalf("bad error message %q", msg)
			}
			return
		}
		if p.Entry != entry || !filepath.IsAbs(p.Prefix) || filepath.Clean(p.Prefix) != p.Prefix {
			t.Fatalf("Parse(%q) = %+v", entry, p)
		}
		if p.Glob != strings.ContainsAny(entry, "*?[") {
			t.Fatalf("Parse(%q).Glob = %v", entry, p.Glob)
		}
		if !p.CouldMatchUnder(p.Prefix) {
			t.Fatalf("Parse(%q).CouldMatchUnder(prefix) = false", entry)
		}
		if !p.Glob {
			if p.Rest != "" || !p.Match(p.Path()) || !regexMatch(t, p, p.Path()) {
				t.Fatalf("Parse(%q) literal does not match its own path %q", entry, p.Path())
			}
			return
		}
		first, _, _ := strings.Cut(p.Rest, "/")
		if !strings.ContainsAny(first, "*?[") {
			t.Fatalf("Parse(%q): prefix %q not maximal, rest %q", entry, p.Prefix, p.Rest)
		}
		if p.Prefix != "/" && p.Match(filepath.Dir(p.Prefix)) {
			t.Fatalf("Parse(%q) matches above its prefix", entry)
		}
		for _, path := range []string{p.Path(), p.Prefix, filepath.Join(p.Prefix, "x")} {
			if filepath.Clean(path) != path {
				continue
			}
			if got, rg := p.Match(path), regexMatch(t, p, path); got != rg {
				t.Fatalf("Parse(%q).Match(%q) = %v, Regex %q says %v", entry, path, got, p.Regex(), rg)
			}
		}
	})
}

func FuzzMatch(f *testing.F) {
	f.Add("**/.env", "a/b/.env")
	f.Add("a/**", "a")
	f.Add("?.txt", "ü.txt")
	f.Add("[!a]*", "\xe9x")
	f.Add("[a-c]x", "/x")
	f.Add("a/**/b", "a/x/y/b")
	f.Add("*?*", "中")
	f.Add("/**/x", "/x")
	f.Fuzz(func(t *testing.T, entry, path string) {
		p, err := Parse(entry, testWS, testHome)
		if err != nil {
			return
		}
		if !strings.HasPrefix(path, "/") {
			path = testWS + "/" + path
		}
		if filepath.Clean(path) != path || strings.IndexByte(path, 0) >= 0 {
			return
		}
		got := p.Match(path)
		if rg := regexMatch(t, p, path); rg != got {
			t.Fatalf("Parse(%q).Match(%q) = %v, Regex %q says %v", entry, path, got, p.Regex(), rg)
		}
		if utf8.ValidString(path) {
			if want := refPatternMatch(p, path); got != want {
				t.Fatalf("Parse(%q).Match(%q) = %v, reference says %v", entry, path, got, want)
			}
		}
		if got && !p.CouldMatchUnder(filepath.Dir(path)) {
			t.Fatalf("Parse(%q).CouldMatchUnder(%q) = false but it matches %q", entry, filepath.Dir(path), path)
		}
	})
}

// TestRegexPOSIX runs the regexes through GNU grep in the C locale, a
// byte-oriented POSIX ERE engine like Seatbelt's, to catch anything Go's
// regexp reads differently from POSIX (brackets, escapes).
func TestRegexPOSIX(t *testing.T) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep")
	}
	rng := rand.New(rand.NewPCG(3, 5))
	paths := []string{"/", "/ws", "/ws/\xe9.pem", "/ws/\xc3", "/ws/\xbc", "/ws/a\xc3\xbc\xbcb", "/ws/\x01", "/ws/a\x7fb"}
	for range 300 {
		base := testWS
		if rng.IntN(5) == 0 {
			base = "/"
		}
		paths = append(paths, randomPath(rng, base))
	}
	input := strings.Join(paths, "\n") + "\n"
	for n := 0; n < 150; {
		entry := randomPattern(rng)
		p, err := Parse(entry, testWS, testHome)
		if err != nil {
			continue
		}
		n++
		cmd := exec.Command(grep, "-a", "-E", "-e", p.Regex())
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.Output()
		if e, ok := err.(*exec.ExitError); ok && e.ExitCode() == 1 {
			err = nil // no line matched
		}
		if err != nil {
			t.Fatalf("grep -E %q: %v", p.Regex(), err)
		}
		hit := map[string]bool{}
		for _, line := range strings.Split(string(out), "\n") {
			hit[line] = true
		}
		for _, path := range paths {
			if got := p.Match(path); got != hit[path] {
				t.Fatalf("Parse(%q).Match(%q) = %v, grep -E %q says %v", entry, path, got, p.Regex(), hit[path])
			}
		}
	}
}
