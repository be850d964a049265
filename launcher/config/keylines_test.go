package config

import (
	"bytes"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestKeyLines(t *testing.T) {
	doc := `# comment [not.a.table]
top = 1
[profiles.a]
extends = "strict" # trailing [comment]
read_only = [
  "/x",   # 1
  '''/y''',
  """
[not a header]
""",
  "/z\"]",
]
[profiles."b.c"]
deny = ["**/.env", "*.pem"]
[ profiles . 'd' ]
inline = { x = 1, y = [ "p", "q" ] }
dotted.key = 2
[profiles."\u001b]0;x\u0007"]
date = 1979-05-27 07:32:00
after = true
[[arr]]
n = 1
`
	k := scanKeyLines([]byte(doc))
	for _, c := range []struct {
		path []string
		elem int
		want int
	}{
		{[]string{"top"}, -1, 2},
		{[]string{"profiles", "a"}, -1, 3},
		{[]string{"profiles", "a", "extends"}, -1, 4},
		{[]string{"profiles", "a", "read_only"}, -1, 5},
		{[]string{"profiles", "a", "read_only"}, 0, 6},
		{[]string{"profiles", "a", "read_only"}, 1, 7},
		{[]string{"profiles", "a", "read_only"}, 2, 8},
		{[]string{"profiles", "a", "read_only"}, 3, 11},
		{[]string{"profiles", "b.c"}, -1, 13},
		{[]string{"profiles", "b.c", "deny"}, 1, 14},
		{[]string{"profiles", "d"}, -1, 15},
		{[]string{"profiles", "d", "inline", "y"}, -1, 16},
		{[]string{"profiles", "d", "inline", "y"}, 1, 16},
		{[]string{"profiles", "d", "dotted", "key"}, -1, 17},
		{[]string{"profiles", "\x1b]0;x\a"}, -1, 18},
		{[]string{"profiles", "\x1b]0;x\a", "after"}, -1, 20},
		{[]string{"arr", "n"}, -1, 22},
		{[]string{"profiles", "a", "nosuch"}, -1, 3},
	} {
		got := k.line(c.path...)
		if c.elem >= 0 {
			got = k.element(c.path, c.elem)
		}
		if got != c.want {
			t.Errorf("%q[%d]: line %d, want %d", c.path, c.elem, got, c.want)
		}
	}
}

// The scanner only meets text the decoder accepted, but must end on any.
func TestKeyLinesEndsOnGarbage(t *testing.T) {
	for _, doc := range []string{"a = [1 }", "a = {x = }", "a = [,]", "[a", "a = \"", "a = '''", "= 1", "a = [[[["} {
		scanKeyLines([]byte(doc))
	}
}

// FuzzScanKeyLines checks that the line scanner ends on any input and
// never reports a line past the end of the text.
func FuzzScanKeyLines(f *testing.F) {
	f.Add([]byte("[profiles.a]\nread_only = [\n  \"/x\",\n  '''y\n[z''',\n]\n"))
	f.Add([]byte("profiles = { p = { deny = [\"{a,b}\"] } }\n[[t]]\nd = 1979-05-27 07:32:00\n"))
	f.Add([]byte("[profiles.\"\\u001b]0;x\\u0007\"]\na = [1 }"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := 1 + bytes.Count(data, []byte("\n"))
		for k, l := range scanKeyLines(data) {
			if l < 1 || l > lines {
				t.Fatalf("%q: line %d of %d", k, l, lines)
			}
		}
	})
}

// keyLine finds where a key is defined, for error messages.
func TestKeyLine(t *testing.T) {
	data := []byte(`# comment
[profiles.a]
extends = "strict"

[profiles."b.c"]
deny = []
[sandbox]
profile = "x"
[profiles.d]
profiles.zzz = 1
`)
	cases := []struct {
		key  toml.Key
		line int
	}{
		{toml.Key{"profiles", "a"}, 2},
		{toml.Key{"profiles", "a", "extends"}, 3},
		{toml.Key{"profiles", "b.c"}, 5},
		{toml.Key{"profiles", "b.c", "deny"}, 6},
		{toml.Key{"sandbox", "profile"}, 8},
		{toml.Key{"profiles", "d", "profiles", "zzz"}, 10},
		{toml.Key{"nowhere"}, 0},
	}
	lines := scanKeyLines(data)
	for _, c := range cases {
		if got := lines.line(c.key...); got != c.line {
			t.Errorf("line(%v) = %d, want %d", c.key, got, c.line)
		}
	}
}
