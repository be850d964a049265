package policy

import (
	"reflect"
	"testing"
)

// Precedence: the most specific grant wins, read-only wins over read-write
// for the same path, hook protection turns write into read.
func TestAccessAt(t *testing.T) {
	p := &Policy{
		ReadAll: true,
		Grants: []Grant{
			{Path: "/w", Access: Write},
			{Path: "/w/ro", Access: Read},
			{Path: "/w/ro/rw", Access: Write},
			{Path: "/w/same", Access: Write},
			{Path: "/w/same", Access: Read},
		},
		Protected: []string{"/w/hooks"},
	}
	cases := map[string]Access{
		"/":               Read,
		"/etc/passwd":     Read,
		"/w":              Write,
		"/w/file":         Write,
		"/wx":             Read, // not below /w
		"/w/ro/f":         Read,
		"/w/ro/rw/f":      Write,
		"/w/same/f":       Read,
		"/w/hooks":        Read,
		"/w/hooks/x.json": Read,
	}
	for path, want := range cases {
		if got := p.AccessAt(path); got != want {
			t.Errorf("AccessAt(%s) = %v, want %v", path, got, want)
		}
	}
	p.ReadAll = false
	if got := p.AccessAt("/etc/passwd"); got != Hidden {
		t.Errorf("without ReadAll, an ungranted path is %v", got)
	}
}

// Layers come parents first, and a pin is kept only where its parent is
// writable (elsewhere the directory cannot be renamed anyway).
func TestLayers(t *testing.T) {
	p := &Policy{
		ReadAll: true,
		Grants: []Grant{
			{Path: "/home/u/ws", Access: Write},
			{Path: "/home/u/.grok", Access: Write},
		},
		Protected: []string{"/home/u/.grok/hooks", "/home/u/ws/.grok/hooks/h.json"},
		Pinned:    []string{"/home", "/home/u", "/home/u/.grok", "/home/u/ws", "/home/u/ws/.grok", "/home/u/ws/.grok/hooks"},
	}
	want := []Layer{
		{"/home/u/.grok", Write},
		{"/home/u/ws", Write},
		{"/home/u/.grok/hooks", Read},
		{"/home/u/ws/.grok", Write},
		{"/home/u/ws/.grok/hooks", Write},
		{"/home/u/ws/.grok/hooks/h.json", Read},
	}
	if got := p.Layers(); !reflect.DeepEqual(got, want) {
		t.Errorf("Layers() =\n%v\nwant\n%v", got, want)
	}
}
