package printable

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"strict", "strict"},
		{"/home/u/ws", "/home/u/ws"},
		{"naïve ünïcode", "naïve ünïcode"},
		{"\x1b]0;pwned\a\x1b[2J", `\x1b]0;pwned\a\x1b[2J`},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"\x7f\u0085", `\x7f\u0085`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffutf8", `bad\xffutf8`},
		{`back\slash`, `back\slash`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
