package globexpand

import "testing"

// TestMatcherWhereGlobLibrariesErr pins our answers on the cases where the
// glob library the design first named (gobwas/glob v0.2.3, compiled with
// '/' as separator) answers differently, which is why segment.go has its
// own matcher. Its answers, checked outside this module when it was
// replaced, are in the gobwas column, for the record only.
func TestMatcherWhereGlobLibrariesErr(t *testing.T) {
	tests := []struct {
		pattern, name string
		gobwas        string // what gobwas v0.2.3 does
		want          bool
	}{
		// Segments without '*' become a "row" matcher that cuts multi-byte
		// characters in half: silent false negatives.
		{"?.pem", "ü.pem", "false", true},
		{"?b", "üb", "false", true},
		{"ü?", "üx", "false", true},
		{"[a]ü", "aü", "false", true},
		{"a?c*", "aüc", "false", true},
		// Only the first item of a class may be a range.
		{"[ab-d]", "c", "false", true},
		{"[ab-d]", "-", "true", false},
		{"[a-cx-z]", "y", "compile error", true},
		{"[a-]", "-", "compile error", true},
		// '^' is not a negation in gobwas.
		{"[^a]", "b", "false", true},
		{"[^a]", "^", "true", true},
		{"\uFFFD*", "\uFFFDx", "compile error", true},
		// Agreements, for contrast.
		{"?", "ü", "true", true},
		{"*.pem", "ü.pem", "true", true},
		{"[!a]", "b", "true", true},
		{"a]", "a]", "true", true},
		{"[ab]]", "a]", "true", true},
	}
	for _, tt := range tests {
		p, err := Parse(tt.pattern, testWS, testHome)
		if err != nil {
			t.Fatal(err)
		}
		path := testWS + "/" + tt.name
		if got := p.Match(path); got != tt.want {
			t.Errorf("Parse(%q).Match(%q) = %v, want %v (gobwas: %s)", tt.pattern, path, got, tt.want, tt.gobwas)
		}
		if got := regexMatch(t, p, path); got != tt.want {
			t.Errorf("Parse(%q).Regex() on %q = %v, want %v", tt.pattern, path, got, tt.want)
		}
	}
}
