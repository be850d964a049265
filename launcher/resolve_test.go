package launcher

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// read_only/read_write entries: /** and /* mean the directory, patterns and
// white space are skipped with a warning, ~ is home, relative is the
// workspace.
func TestNormaliseGrant(t *testing.T) {
	cases := []struct {
		entry, path, warn string
	}{
		{"/data", "/data", ""},
		{"/data/", "/data", ""},
		{"/data/cache/**", "/data/cache", ""},
		{"/data/cache/*", "/data/cache", ""},
		{"/**", "/", ""},
		{"/*", "/", ""},
		{"~", "/home/u", ""},
		{"~/tools", "/home/u/tools", ""},
		{"build", "/ws/build", ""},
		{"./build/../out", "/ws/out", ""},
		{"/home/**/cache", "", "is a pattern"},
		{"/data/**/**", "", "is a pattern"},
		{"dir[1]", "", "is a pattern"},
		{"a?", "", "is a pattern"},
		{" /etc", "", "white space"},
		{"/etc ", "", "white space"},
		{"/etc\t", "", "white space"},
		{"", "", "is empty"},
	}
	for _, c := range cases {
		path, warn := normaliseGrant(c.entry, "/ws", "/home/u")
		if path != c.path || !strings.Contains(warn, c.warn) || (c.warn == "") != (warn == "") {
			t.Errorf("normaliseGrant(%q) = %q, %q; want %q, %q", c.entry, path, warn, c.path, c.warn)
		}
	}
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
