package policy

import "testing"

func TestParseHostRule(t *testing.T) {
	good := map[string]string{
		"Packages.Example.org": "packages.example.org",
		"*.example.net:443":    "*.example.net:443",
		"127.0.0.2:8080":       "127.0.0.2:8080",
		"[::1]:80":             "[::1]:80",
		"[::ffff:10.0.0.1]":    "10.0.0.1",
		"localhost:5000":       "localhost:5000",
		"example.org.":         "example.org",
	}
	for in, want := range good {
		r, msg := ParseHostRule(in)
		if msg != "" || r.String() != want {
			t.Errorf("%q: got %q, %q; want %q", in, r.String(), msg, want)
		}
	}
	for _, in := range []string{"", " x", "a b", "*.com", "a.*.b", "x:0", "x:65536", "x:+1", "::1", "[::1", "[1.2.3.4]", "a\nb", "-a.b", "a..b", "ex ample"} {
		if _, msg := ParseHostRule(in); msg == "" {
			t.Errorf("%q: accepted", in)
		}
	}
}

func TestHostRuleAllows(t *testing.T) {
	cases := []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"example.org", "example.org", 443, true},
		{"example.org", "example.org", 80, true},
		{"example.org", "example.org", 8080, false},
		{"example.org", "www.example.org", 443, false},
		{"*.example.net:443", "a.example.net", 443, true},
		{"*.example.net:443", "a.b.example.net", 443, true},
		{"*.example.net:443", "example.net", 443, false},
		{"*.example.net:443", "a.example.net", 80, false},
		{"*.example.net", "evilexample.net", 443, false},
		{"127.0.0.2:8080", "127.0.0.2", 8080, true},
		{"127.0.0.2:8080", "127.0.0.2", 8081, false},
		{"127.0.0.2:8080", "::ffff:127.0.0.2", 8080, true},
		{"[::1]:80", "[::1]", 80, true},
		{"example.org", "EXAMPLE.org.", 443, true},
		{"example.org", "93.184.216.34", 443, false},
	}
	for _, c := range cases {
		r, msg := ParseHostRule(c.rule)
		if msg != "" {
			t.Fatalf("%q: %s", c.rule, msg)
		}
		if got := r.Allows(c.host, c.port); got != c.want {
			t.Errorf("%q allows %s:%d = %v, want %v", c.rule, c.host, c.port, got, c.want)
		}
	}
}
