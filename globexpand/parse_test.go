package globexpand

import (
	"fmt"
	"strings"
	"testing"
)

const (
	testWS   = "/ws"
	testHome = "/home/u"
)

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		entry, ws string
		glob      bool
		prefix    string
		rest      string
	}{
		{entry: "*.pem", glob: true, prefix: "/ws", rest: "*.pem"},
		{entry: "**/.env", glob: true, prefix: "/ws", rest: "**/.env"},
		{entry: "**", glob: true, prefix: "/ws", rest: "**"},
		{entry: "a/**", glob: true, prefix: "/ws/a", rest: "**"},
		{entry: "a/**/b", glob: true, prefix: "/ws/a", rest: "**/b"},
		{entry: "a/**/**/b", glob: true, prefix: "/ws/a", rest: "**/**/b"},
		{entry: "certs/**/*.pem", glob: true, prefix: "/ws/certs", rest: "**/*.pem"},
		{entry: "a/b[0-9]/c", glob: true, prefix: "/ws/a", rest: "b[0-9]/c"},
		{entry: "/home/**/.ssh", glob: true, prefix: "/home", rest: "**/.ssh"},
		{entry: "/**/x", glob: true, prefix: "/", rest: "**/x"},
		{entry: "/**", glob: true, prefix: "/", rest: "**"},
		{entry: "/etc/*", glob: true, prefix: "/etc", rest: "*"},
		{entry: "/etc/passwd", prefix: "/etc/passwd"},
		{entry: "[^a]", glob: true, prefix: "/ws", rest: "[^a]"},
		{entry: "[!a]", glob: true, prefix: "/ws", rest: "[!a]"},
		{entry: "[ab]]", glob: true, prefix: "/ws", rest: "[ab]]"},
		{entry: "[-a]", glob: true, prefix: "/ws", rest: "[-a]"},
		{entry: "[a-]", glob: true, prefix: "/ws", rest: "[a-]"},
		{entry: "[!-]", glob: true, prefix: "/ws", rest: "[!-]"},
		{entry: "[.-0]", glob: true, prefix: "/ws", rest: "[.-0]"}, // range spans '/'
		{entry: "[a-a]", glob: true, prefix: "/ws", rest: "[a-a]"},
		{entry: "[?*]x", glob: true, prefix: "/ws", rest: "[?*]x"},
		{entry: "dir[[]1]", glob: true, prefix: "/ws", rest: "dir[[]1]"},
		{entry: "a]", prefix: "/ws/a]"},
		{entry: "a]/b]c", prefix: "/ws/a]/b]c"},
		{entry: "my file.txt", prefix: "/ws/my file.txt"},
		{entry: "x/my file?.txt", glob: true, prefix: "/ws/x", rest: "my file?.txt"},
		{entry: "ü*.txt", glob: true, prefix: "/ws", rest: "ü*.txt"},
		{entry: "日本/?.txt", glob: true, prefix: "/ws/日本", rest: "?.txt"},
		{entry: "a/~b", prefix: "/ws/a/~b"},
		{entry: "!important", prefix: "/ws/!important"},
		{entry: "~", prefix: "/home/u"},
		{entry: "~/x", prefix: "/home/u/x"},
		{entry: "~/.ssh/*", glob: true, prefix: "/home/u/.ssh", rest: "*"},
		{entry: "~/**", glob: true, prefix: "/home/u", rest: "**"},
		// The workspace is literal even when it looks like a glob.
		{entry: "*.pem", ws: "/tmp/dir[1]", glob: true, prefix: "/tmp/dir[1]", rest: "*.pem"},
		{entry: "x", ws: "/tmp/dir[1]", prefix: "/tmp/dir[1]/x"},
		{entry: "a/*", ws: "/", glob: true, prefix: "/a", rest: "*"},
		{entry: "/abs", ws: "", prefix: "/abs"}, // no workspace needed
	}
	for _, tt := range tests {
		ws := tt.ws
		if ws == "" && !strings.HasPrefix(tt.entry, "/") {
			ws = testWS
		}
		p, err := Parse(tt.entry, ws, testHome)
		if err != nil {
			t.Errorf("Parse(%q, %q): %v", tt.entry, ws, err)
			continue
		}
		if p.Entry != tt.entry || p.Glob != tt.glob || p.Prefix != tt.prefix || p.Rest != tt.rest {
			t.Errorf("Parse(%q, %q) = {%q %v %q %q}, want {%q %v %q %q}", tt.entry, ws,
				p.Entry, p.Glob, p.Prefix, p.Rest, tt.entry, tt.glob, tt.prefix, tt.rest)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct{ entry, reason string }{
		{"", "empty"},
		{" x", "white space"},
		{"x ", "white space"},
		{"\tx", "white space"},
		{"x\n", "white space"},
		{"x\u00a0", "white space"},
		{" ", "white space"},
		{"a\x00b", "NUL"},
		{"a\xffb", "UTF-8"},
		{"{a,b}", "brace"},
		{"*.{pem,key}", "brace"},
		{"a}", "brace"},
		{"a\\b", "backslash"},
		{"\\*", "backslash"},
		{"a//b", "empty path segment"},
		{"//a", "empty path segment"},
		{"a/", `trailing "/"`},
		{"/a/", `trailing "/"`},
		{"*/", `trailing "/"`},
		{"~/", `trailing "/"`},
		{".", `"." segments`},
		{"..", `".." segments`},
		{"./a", `"." segments`},
		{"a/./b", `"." segments`},
		{"a/..", `".." segments`},
		{"/a/../b", `".." segments`},
		{"*/../x", `".." segments`},
		{"/", "deny everything"},
		{"~bob", "only"},
		{"~bob/x", "only"},
		{"~x*", "only"},
		{"a**", `"**" must be a whole`},
		{"**b", `"**" must be a whole`},
		{"***", `"**" must be a whole`},
		{"a/***/b", `"**" must be a whole`},
		{"x/a**/b", `"**" must be a whole`},
		{"**.pem", `"**" must be a whole`},
		{"[abc", "unclosed"},
		{"[", "unclosed"},
		{"[!", "unclosed"},
		{"a[b/c]", "never matches"},
		{"[!/]", "never matches"},
		{"[^/]x", "never matches"},
		{"[a-/]", "never matches"},
		{"[]", "empty or start"},
		{"[]a]", "empty or start"},
		{"[!]a]", "empty or start"},
		{"[^]a]", "empty or start"},
		{"[!]", "empty or start"},
		{"[[:alpha:]]", "POSIX"},
		{"[a[:x]", "POSIX"},
		{"[[.a.]]", "POSIX"},
		{"[[=a=]]", "POSIX"},
		{"[z-a]", "reversed"},
		{"[!9-0]", "reversed"},
		{"[a-c-e]", "ambiguous"},
		{"[ü]", "ASCII"},
		{"[a-ü]", "ASCII"},
		{"[!é]x", "ASCII"},
	}
	for _, tt := range tests {
		p, err := Parse(tt.entry, testWS, testHome)
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want error containing %q", tt.entry, p, tt.reason)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.reason) {
			t.Errorf("Parse(%q) error %q does not contain %q", tt.entry, msg, tt.reason)
		}
		if want := fmt.Sprintf("deny entry %q: ", tt.entry); !strings.HasPrefix(msg, want) {
			t.Errorf("Parse(%q) error %q does not start with %q", tt.entry, msg, want)
		}
		if strings.ContainsAny(msg, "\n\r") {
			t.Errorf("Parse(%q) error is not one line: %q", tt.entry, msg)
		}
	}
}

func TestParseNeedsAnchors(t *testing.T) {
	for _, tt := range []struct{ entry, ws, home string }{
		{"~", testWS, ""},
		{"~/x", testWS, "relative/home"},
		{"x", "", testHome},
		{"*.pem", "ws", testHome},
		{"x", "/ws/../other", testHome},
		{"x", "/ws/", testHome},
	} {
		if p, err := Parse(tt.entry, tt.ws, tt.home); err == nil {
			t.Errorf("Parse(%q, %q, %q) = %+v, want error", tt.entry, tt.ws, tt.home, p)
		}
	}
}

func TestPath(t *testing.T) {
	for _, tt := range []struct{ entry, path string }{
		{"*.pem", "/ws/*.pem"},
		{"a/**/b", "/ws/a/**/b"},
		{"/**/x", "/**/x"},
		{"~/x", "/home/u/x"},
		{"a]", "/ws/a]"},
	} {
		p, err := Parse(tt.entry, testWS, testHome)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Path(); got != tt.path {
			t.Errorf("Parse(%q).Path() = %q, want %q", tt.entry, got, tt.path)
		}
	}
}

// A Pattern that did not come from Parse must not silently match nothing.
func TestHandBuiltPattern(t *testing.T) {
	ok := Pattern{Entry: "x", Glob: true, Prefix: "/ws", Rest: "*.pem"}
	if !ok.Match("/ws/a.pem") {
		t.Error("hand-built pattern does not match")
	}
	bad := Pattern{Entry: "x", Glob: true, Prefix: "/ws", Rest: "{a,b}"}
	if _, _, err := Expand([]Pattern{bad}, Limits{}); err == nil {
		t.Error("Expand accepted an invalid hand-built pattern")
	}
	defer func() {
		if recover() == nil {
			t.Error("Match on an invalid hand-built pattern did not panic")
		}
	}()
	bad.Match("/ws/a")
}
