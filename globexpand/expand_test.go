package globexpand

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// makeTree creates files (ending in "/" for directories, "name -> target"
// for symlinks) under a fresh canonical temp directory and returns it.
func makeTree(t testing.TB, entries ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name, target, isLink := strings.Cut(e, " -> ")
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case isLink:
			err = os.Symlink(target, path)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(path, 0o755)
		default:
			err = os.WriteFile(path, []byte(".env\n*.pem\nsecrets/\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func parseAll(t testing.TB, ws string, entries ...string) []Pattern {
	t.Helper()
	var ps []Pattern
	for _, e := range entries {
		p, err := Parse(e, ws, "/nonexistent-home")
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// show renders matches relative to root, one per line, for comparison.
func show(root string, ms []Match) string {
	var b strings.Builder
	for _, m := range ms {
		rel := strings.TrimPrefix(m.Path, root+"/")
		if m.Path == root {
			rel = "."
		}
		if m.Dir {
			rel += "/"
		}
		if m.Target != "" {
			rel += " -> " + strings.TrimPrefix(m.Target, root+"/")
		}
		fmt.Fprintf(&b, "%s [%s]\n", rel, m.Entry)
	}
	return b.String()
}

func TestExpand(t *testing.T) {
	root := makeTree(t,
		"outside/target.env",
		"ws/.env",
		"ws/.gitignore", // lists .env, *.pem and secrets/: must not matter
		"ws/a.pem",
		"ws/sub/.env",
		"ws/sub/deep/.env",
		"ws/sub/x.txt",
		"ws/secrets/k1",
		"ws/secrets/inner/.env",
		"ws/linkdir -> sub", // a symlinked directory: not followed
		"ws/lnk/.env -> ../../outside/target.env", // a matching symlink
		"ws/dangling/.env -> nowhere",
		"ws/loop/.env -> .env",
		"ws/envdir/.env/inside.pem",
	)
	ws := root + "/ws"
	ps := parseAll(t, ws, "**/.env", "secrets/**", "*.pem", ".env", "missing.txt", "nope/**", "sub/x.txt", "linkdir", "linkdir/*.txt")
	matches, missing, err := Expand(ps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := `ws/.env [**/.env]
ws/a.pem [*.pem]
ws/dangling/.env [**/.env]
ws/envdir/.env/ [**/.env]
ws/linkdir -> ws/sub [linkdir]
ws/lnk/.env -> outside/target.env [**/.env]
ws/loop/.env [**/.env]
ws/secrets/ [secrets/**]
ws/sub/.env [**/.env]
ws/sub/deep/.env [**/.env]
ws/sub/x.txt [sub/x.txt]
`
	if got := show(root, matches); got != want {
		t.Errorf("matches:\n%s\nwant:\n%s", got, want)
	}
	var miss []string
	for _, p := range missing {
		miss = append(miss, p.Entry)
	}
	if !slices.Equal(miss, []string{"missing.txt", "nope/**"}) {
		t.Errorf("missing = %q", miss)
	}

	// The first entry in input order names a path matched twice.
	matches, _, err = Expand(parseAll(t, ws, ".env", "**/.env"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if matches[0].Path != ws+"/.env" || matches[0].Entry != ".env" {
		t.Errorf("first match %+v, want %s/.env by entry .env", matches[0], ws)
	}
}

// A glob whose prefix is a symlink is walked, and reported, below the
// resolved prefix.
func TestExpandResolvesPrefix(t *testing.T) {
	root := makeTree(t, "real/x.txt", "real/y.md", "ws/link -> ../real")
	matches, _, err := Expand(parseAll(t, root+"/ws", "link/*.txt"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(root, matches), "real/x.txt [link/*.txt]\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The workspace is taken literally even though it looks like a glob.
func TestExpandGlobLookingWorkspace(t *testing.T) {
	root := makeTree(t, "dir[1]/k.pem", "dir1/k.pem", "dir[1]/[x].pem")
	matches, _, err := Expand(parseAll(t, root+"/dir[1]", "*.pem", "[[]x].pem"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(root, matches), "dir[1]/[x].pem [*.pem]\ndir[1]/k.pem [*.pem]\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// recordOpens makes openDir record every directory a walk reads and fail
// with EACCES on the directories in deny.
func recordOpens(t *testing.T, deny ...string) func() []string {
	var mu sync.Mutex
	var opened []string
	orig := openDir
	openDir = func(name string) (*os.File, error) {
		mu.Lock()
		opened = append(opened, name)
		mu.Unlock()
		if slices.Contains(deny, name) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
		}
		return orig(name)
	}
	t.Cleanup(func() { openDir = orig })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(opened)
	}
}

func TestExpandPrunes(t *testing.T) {
	root := makeTree(t, "certs/a.pem", "certs/b.txt", "certs/x/c.pem", "big/d1/e.pem", "big/f.pem", "sub/g.pem")
	opened := recordOpens(t, root+"/big")

	for _, tt := range []struct {
		entry  string
		opened []string
		found  string
	}{
		{"certs/**/*.pem", []string{"/certs", "/certs/x"}, "certs/a.pem [certs/**/*.pem]\ncerts/x/c.pem [certs/**/*.pem]\n"},
		{"c*/*.pem", []string{"", "/certs"}, "certs/a.pem [c*/*.pem]\n"},
		{"c*/x/*.pem", []string{"", "/certs", "/certs/x"}, "certs/x/c.pem [c*/x/*.pem]\n"},
		{"*.pem", []string{""}, ""},
	} {
		before := len(opened())
		matches, _, err := Expand(parseAll(t, root, tt.entry), Limits{})
		if err != nil {
			t.Errorf("%s: %v", tt.entry, err)
			continue
		}
		var got []string
		for _, d := range opened()[before:] {
			got = append(got, strings.TrimPrefix(d, root))
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.opened) {
			t.Errorf("%s read %q, want %q", tt.entry, got, tt.opened)
		}
		if s := show(root, matches); s != tt.found {
			t.Errorf("%s found %q, want %q", tt.entry, s, tt.found)
		}
	}

	// A glob that could match inside the unreadable directory fails closed.
	_, _, err := Expand(parseAll(t, root, "*/*.pem"), Limits{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", root+"/big")) || !strings.Contains(err.Error(), `"*/*.pem"`) {
		t.Errorf("unreadable directory: err = %v", err)
	}
}

func TestExpandUnreadableForReal(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory")
	}
	root := makeTree(t, "locked/x.pem", "open/y.pem")
	if err := os.Chmod(root+"/locked", 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(root+"/locked", 0o755) })
	if _, _, err := Expand(parseAll(t, root, "open/*.pem"), Limits{}); err != nil {
		t.Errorf("pruned walk: %v", err)
	}
	_, _, err := Expand(parseAll(t, root, "**/*.pem"), Limits{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", root+"/locked")) {
		t.Errorf("unreadable directory: err = %v", err)
	}
}

func TestExpandLimits(t *testing.T) {
	var entries []string
	for i := range 30 {
		entries = append(entries, fmt.Sprintf("big/f%02d", i))
	}
	entries = append(entries, "deep/1/2/3/4/5/6/x")
	root := makeTree(t, entries...)

	for _, tt := range []struct {
		entries []string
		lim     Limits
		limit   string
		dir     string
	}{
		{[]string{"big/*"}, Limits{MaxMatches: 10}, "MaxMatches=10", "/big"},
		{[]string{"**/x", "deep/**/y"}, Limits{MaxDepth: 3}, "MaxDepth=3", "/deep/1/2/3"},
		{[]string{"big/*x"}, Limits{MaxVisited: 20}, "MaxVisited=20", "/big"},
	} {
		_, _, err := Expand(parseAll(t, root, tt.entries...), tt.lim)
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("%q with %+v: err = %v, want *LimitError", tt.entries, tt.lim, err)
			continue
		}
		msg := err.Error()
		for _, want := range append([]string{tt.limit, fmt.Sprintf("%q", root+tt.dir), "certs/**/*.pem"}, quoted(tt.entries)...) {
			if !strings.Contains(msg, want) {
				t.Errorf("%q: error %q does not mention %s", tt.entries, msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("error is not one line: %q", msg)
		}
	}

	// Exactly at the limit is fine.
	ms, _, err := Expand(parseAll(t, root, "big/*"), Limits{MaxMatches: 30})
	if err != nil || len(ms) != 30 {
		t.Errorf("at the limit: %d matches, %v", len(ms), err)
	}
	if _, _, err := Expand(parseAll(t, root, "big/*"), Limits{MaxVisited: 30}); err != nil {
		t.Errorf("at the visit limit: %v", err)
	}
	if _, _, err := Expand(parseAll(t, root, "**/x"), Limits{MaxDepth: 7}); err != nil {
		t.Errorf("at the depth limit: %v", err)
	}
}

func quoted(s []string) []string {
	var q []string
	for _, x := range s {
		q = append(q, fmt.Sprintf("%q", x))
	}
	return q
}

// A bigger tree, walked by several goroutines, must give the same answer as
// Match applied to every path.
func TestExpandAgreesWithMatch(t *testing.T) {
	root := makeTree(t)
	genTree(t, root, 3, 5, 4)
	ps := parseAll(t, root, "**/*.pem", "d1/**/f2*", "*/d[0-2]/?.env", "d3/**", "**/d4/d0")
	matches, _, err := Expand(ps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			path := dir + "/" + e.Name()
			hit := false
			for _, p := range ps {
				hit = hit || p.Match(path)
			}
			if hit {
				want = append(want, path)
			} else if e.IsDir() {
				walk(path)
			}
		}
	}
	walk(root)
	slices.Sort(want)
	var got []string
	for _, m := range matches {
		got = append(got, m.Path)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Expand found %d paths, Match %d", len(got), len(want))
	}
	if len(want) < 50 {
		t.Errorf("tree too small: %d matches", len(want))
	}
}

// genTree makes depth levels of width directories, each with files.
func genTree(t testing.TB, dir string, depth, width, files int) {
	for i := range files {
		for _, ext := range []string{".pem", ".txt", ".env"} {
			name := fmt.Sprintf("%s/f%d%s", dir, i, ext)
			if err := os.WriteFile(name, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if depth == 0 {
		return
	}
	for i := range width {
		sub := fmt.Sprintf("%s/d%d", dir, i)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		genTree(t, sub, depth-1, width, files)
	}
}

// BenchmarkExpand walks a generated tree of about 2,000 entries, or the
// directory named by GLOBEXPAND_BENCH_TREE.
func BenchmarkExpand(b *testing.B) {
	root := os.Getenv("GLOBEXPAND_BENCH_TREE")
	if root == "" {
		root = makeTree(b)
		genTree(b, root, 3, 5, 4)
	}
	ps := parseAll(b, root, "**/.env", "**/*.pem", "d1/**", "*/d2/*.txt")
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := Expand(ps, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A walk from / passes /proc, /sys and /dev by, and a glob anchored in one
// of them is refused instead of walked (#13 item 13).
func TestExpandSkipsVirtualFS(t *testing.T) {
	opened := recordOpens(t)
	if _, _, err := Expand(parseAll(t, "/", "/*/grok-sandbox-no-such-name-*"), Limits{}); err != nil {
		t.Fatalf("walk from /: %v", err)
	}
	read := opened()
	if !slices.Contains(read, "/") {
		t.Fatalf("the walk did not read /: %q", read)
	}
	for _, d := range read {
		for _, v := range VirtualFS {
			if d == v || strings.HasPrefix(d, v+"/") {
				t.Errorf("the walk read %s", d)
			}
		}
	}
	matches, _, err := Expand(parseAll(t, "/", "/[dps]*"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		if inVirtualFS(m.Path) != "" {
			t.Errorf("matched %s", m.Path)
		}
	}
	for _, entry := range []string{"/proc/*/environ", "/sys/**/secret", "/dev/shm/*"} {
		_, _, err := Expand(parseAll(t, "/", entry), Limits{})
		if err == nil || !strings.Contains(err.Error(), "globs are not expanded inside") {
			t.Errorf("%s: err = %v", entry, err)
		}
	}
	// An exact path there is looked up as before.
	if m, _, err := Expand(parseAll(t, "/", "/proc/self"), Limits{}); err != nil || len(m) != 1 {
		t.Errorf("/proc/self: %v, %v", m, err)
	}
}
