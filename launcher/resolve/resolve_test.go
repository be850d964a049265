package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"grok-sandbox/launcher/policy"
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

// A grant entry is never resolved through a link a sandbox could write (in
// the workspace, GROK_HOME, the temporary directories, a writable grant, or
// any directory you can write), not even at the end of a chain that starts
// in a directory you cannot write.
func TestCanonicalGrantRefusesWritableLinks(t *testing.T) {
	// Not under /tmp, which every sandbox writes.
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no cache directory outside /tmp:", err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(cache, "grok-sandbox-unit")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	ws, safe, target := filepath.Join(root, "ws"), filepath.Join(root, "safe"), filepath.Join(root, "target")
	for _, d := range []string{ws, safe, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(target, filepath.Join(ws, "inws"))
	os.Symlink(target, filepath.Join(safe, "direct"))
	os.Symlink(filepath.Join(ws, "inws"), filepath.Join(safe, "chain"))
	p := &policy.Policy{Workspace: ws, GrokHome: filepath.Join(root, "gh"), ReadAll: true,
		Grants: []policy.Grant{{Path: ws, Access: policy.Write}}}
	// safe is a directory you cannot write: links in it are followed (by
	// the same rule). Root can write every directory, so for root no link
	// in an entry is ever followed.
	if err := os.Chmod(safe, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(safe, 0o755)
	direct, chain := struct{ want, link string }{target, ""}, struct{ want, link string }{"", filepath.Join(ws, "inws")}
	if os.Geteuid() == 0 {
		direct.want, direct.link = "", filepath.Join(safe, "direct")
		chain.link = filepath.Join(safe, "chain")
	}
	for _, tc := range []struct {
		path, want, link string
	}{
		{filepath.Join(ws, "inws"), "", filepath.Join(ws, "inws")},
		{filepath.Join(safe, "direct"), direct.want, direct.link},
		{filepath.Join(safe, "chain"), chain.want, chain.link},
		{filepath.Join(target), target, ""},
	} {
		got, link, err := canonicalGrant(p, tc.path)
		if err != nil || got != tc.want || link != tc.link {
			t.Errorf("canonicalGrant(%s) = %q, link %q, %v; want %q, link %q", tc.path, got, link, err, tc.want, tc.link)
		}
	}
}
