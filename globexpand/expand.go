package globexpand

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"sync/atomic"
	"syscall"
)

// Match is one existing path that a deny entry matched.
type Match struct {
	Path   string // absolute path found (not resolved)
	Dir    bool   // a directory (not following symlinks)
	Target string // for a symlink: its fully resolved canonical target ("" if dangling or not a symlink)
	Entry  string // the deny entry that matched
}

// Limits bound a glob expansion. A walk that reaches one fails: a deny
// list enforced in part is worse than a refusal the user can fix. Zero or
// negative fields mean the DefaultLimits value.
type Limits struct {
	MaxMatches int // total matches across all patterns
	MaxDepth   int // directory depth below a walk's start
	MaxVisited int // directory entries examined in total
}

// DefaultLimits keep start-up time and the size of the enforced rule set
// sane. 20000 matches is far beyond any hand-written deny list yet well
// below the kernel's default limit of 100000 mounts (fs.mount-max) that
// bubblewrap masks count against. 64 levels is deeper than real source
// trees, and stops a runaway "**" early. Two million entries take a few
// seconds to read on two cores with a warm cache.
var DefaultLimits = Limits{MaxMatches: 20000, MaxDepth: 64, MaxVisited: 2000000}

// LimitError reports a walk stopped at a limit. The run must be refused
// rather than enforce part of the deny list.
type LimitError struct {
	Limit string   // "MaxMatches", "MaxDepth" or "MaxVisited"
	Value int      // the limit's value
	Globs []string // the deny entries being expanded
	Dir   string   // the directory where the walk stopped
}

func (e *LimitError) Error() string {
	what := "deny entries"
	if len(e.Globs) > 0 {
		what = "deny globs " + quoteAll(e.Globs)
	}
	return fmt.Sprintf("%s: expansion stopped at %s=%d in %q; anchor the glob deeper (e.g. certs/**/*.pem instead of **/*.pem) or deny the directory itself",
		what, e.Limit, e.Value, e.Dir)
}

// VirtualFS are the kernel's file systems, which a walk never enters: their
// trees are generated (/proc/PID/task/… changes under the walk and has
// entries no one may read), and the sandbox gets its own /proc and /dev
// and no user files live in /sys.
var VirtualFS = []string{"/proc", "/sys", "/dev"}

// inVirtualFS returns the virtual file system path is in, or "".
func inVirtualFS(path string) string {
	for _, v := range VirtualFS {
		if path == v || under(path, v) {
			return v
		}
	}
	return ""
}

// openDir is replaced in tests to see which directories a walk reads and to
// inject errors that root cannot otherwise get.
var openDir = os.Open

// Expand finds the existing paths the patterns match.
//
// A literal pattern is looked up with Lstat: it yields one Match, or goes to
// missing. A glob's Prefix is resolved with filepath.EvalSymlinks (a missing
// prefix puts the glob in missing) and the tree below is walked; Paths are
// reported below the resolved prefix, their own last element unresolved.
// The walk:
//
//   - sees everything: hidden files count, .gitignore means nothing;
//   - does not follow symlinks: a symlink is a leaf, reported with its
//     resolved Target if its own path matches. A file reached only through
//     a symlinked directory inside the tree is not matched, because it is
//     not at a path the glob names;
//   - reports a matching directory and does not descend into it, as hiding
//     the directory hides everything in it;
//   - skips directories CouldMatchUnder rules out, and reads each tree once
//     for all globs whose resolved prefixes fall in it;
//   - never enters or matches /proc, /sys or /dev (see VirtualFS): a walk
//     from / passes them by, and a glob whose resolved prefix lies in one is
//     an error (an exact path there is still looked up).
//
// An unreadable directory is an error, not skipped. It is tempting to skip
// it since the sandboxed process runs as the same user and cannot read it
// either, but the owner of a directory can chmod it back, inside the
// sandbox too, and then whatever should have matched in it is exposed.
//
// The result is a snapshot: files created later are not in it. Matches are
// sorted by Path; a path matched by several entries is reported once, with
// the entry that comes first in patterns. Missing patterns keep their input
// order. A limit reached returns a *LimitError.
func Expand(patterns []Pattern, lim Limits) (matches []Match, missing []Pattern, err error) {
	lim = lim.withDefaults()
	w := &walker{lim: lim, sem: make(chan struct{}, runtime.GOMAXPROCS(0)-1)}

	var globs []walkPattern
	for i, p := range patterns {
		segs, err := p.compile()
		if err != nil {
			return nil, nil, err
		}
		if !p.Glob {
			fi, err := os.Lstat(p.Prefix)
			if isNotExist(err) {
				missing = append(missing, p)
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("deny entry %q: %v; cannot tell whether it exists, so refusing to run", p.Entry, err)
			}
			if err := w.report(nil, p.Prefix, fi.Mode(), i, p.Entry); err != nil {
				return nil, nil, err
			}
			continue
		}
		root, err := filepath.EvalSymlinks(p.Prefix)
		if isNotExist(err) {
			missing = append(missing, p)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("deny entry %q: cannot resolve %q: %v; refusing to run without it", p.Entry, p.Prefix, err)
		}
		if v := inVirtualFS(root); v != "" {
			return nil, nil, fmt.Errorf("deny entry %q: globs are not expanded inside %s (%s), a kernel file system whose walk never ends cleanly; deny exact paths there instead", p.Entry, v, root)
		}
		globs = append(globs, walkPattern{entry: p.Entry, order: i, root: root, segs: segs})
	}

	for _, g := range groupByRoot(globs) {
		w.walkRoot(g)
		if w.failed.Load() {
			break
		}
	}
	w.wg.Wait()
	if w.err != nil {
		return nil, nil, w.err
	}
	return dedupe(w.found), missing, nil
}

func (lim Limits) withDefaults() Limits {
	if lim.MaxMatches <= 0 {
		lim.MaxMatches = DefaultLimits.MaxMatches
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultLimits.MaxDepth
	}
	if lim.MaxVisited <= 0 {
		lim.MaxVisited = DefaultLimits.MaxVisited
	}
	return lim
}

// isNotExist also counts ENOTDIR: a file where a directory was expected
// means the path does not exist.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

type walkPattern struct {
	entry string
	order int    // index in Expand's input
	root  string // resolved Prefix
	segs  []segment
}

type group struct {
	root  string
	pats  []walkPattern
	globs []string
}

// groupByRoot puts each glob into the group of the shortest resolved prefix
// that contains its own, so that a tree is read once. A glob moved to a
// higher root gets the path in between as literal segments, which are
// compared byte for byte and never parsed: the path may contain '['.
func groupByRoot(globs []walkPattern) []*group {
	sorted := slices.Clone(globs)
	slices.SortStableFunc(sorted, func(a, b walkPattern) int { return len(a.root) - len(b.root) })
	var groups []*group
next:
	for _, p := range sorted {
		for _, g := range groups {
			rel, ok := relative(p.root, g.root)
			if !ok {
				continue
			}
			var lits []segment
			if rel != "" {
				for _, name := range strings.Split(rel, "/") {
					lits = append(lits, segment{toks: []token{{kind: tokenLiteral, lit: name}}})
				}
			}
			if len(lits)+len(p.segs) > maxSegments {
				continue
			}
			p.segs = append(lits, p.segs...)
			g.pats = append(g.pats, p)
			continue next
		}
		groups = append(groups, &group{root: p.root, pats: []walkPattern{p}})
	}
	for _, g := range groups {
		slices.SortFunc(g.pats, func(a, b walkPattern) int { return a.order - b.order })
		for _, p := range g.pats {
			g.globs = append(g.globs, p.entry)
		}
	}
	return groups
}

type found struct {
	m     Match
	order int
}

type walker struct {
	lim     Limits
	sem     chan struct{} // one token per extra goroutine
	wg      sync.WaitGroup
	visited atomic.Int64
	matched atomic.Int64
	failed  atomic.Bool

	mu    sync.Mutex
	found []found
	err   error
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.failed.Store(true)
}

// report records a match; the error is for the caller to pass to fail.
func (w *walker) report(g *group, path string, mode fs.FileMode, order int, entry string) error {
	if n := w.matched.Add(1); n > int64(w.lim.MaxMatches) {
		e := &LimitError{Limit: "MaxMatches", Value: w.lim.MaxMatches, Dir: filepath.Dir(path)}
		if g != nil {
			e.Globs = g.globs
		}
		return e
	}
	m := Match{Path: path, Dir: mode.IsDir(), Entry: entry}
	if mode&fs.ModeSymlink != 0 {
		t, err := resolve(path)
		if err != nil {
			return err
		}
		m.Target = t
	}
	w.mu.Lock()
	w.found = append(w.found, found{m, order})
	w.mu.Unlock()
	return nil
}

// resolve returns a symlink's canonical target, or "" if there is none to
// protect: the link dangles or loops.
func resolve(path string) (string, error) {
	t, err := filepath.EvalSymlinks(path)
	if err == nil {
		return t, nil
	}
	if isNotExist(err) {
		return "", nil
	}
	if _, serr := os.Stat(path); errors.Is(serr, syscall.ELOOP) {
		return "", nil
	}
	return "", fmt.Errorf("cannot resolve symlink %q: %v; refusing to run without knowing what it exposes", path, err)
}

func (w *walker) walkRoot(g *group) {
	fi, err := os.Lstat(g.root)
	if isNotExist(err) {
		return // removed since EvalSymlinks: nothing to hide
	}
	if err != nil {
		w.fail(fmt.Errorf("deny globs %s: %v; refusing to run", quoteAll(g.globs), err))
		return
	}
	states := make([]uint64, len(g.pats))
	first := -1
	for k, p := range g.pats {
		states[k] = start(p.segs)
		if states[k]&final(p.segs) != 0 && first < 0 {
			first = k
		}
		states[k] &^= final(p.segs)
	}
	if first >= 0 {
		if err := w.report(g, g.root, fi.Mode(), g.pats[first].order, g.pats[first].entry); err != nil {
			w.fail(err)
		}
		return
	}
	if fi.IsDir() {
		w.walkDir(g, g.root, 0, states)
	}
}

// walkDir reads one directory and matches its entries against every pattern
// still alive in states. Subdirectories go to another goroutine while one
// is free and are walked inline otherwise, which bounds the goroutines
// without a queue.
func (w *walker) walkDir(g *group, dir string, depth int, states []uint64) {
	if w.failed.Load() {
		return
	}
	var visited int64
	err := eachEntry(dir, func(name string, typ fs.FileMode) bool {
		if visited++; visited%256 == 0 && w.failed.Load() {
			return false
		}
		if dir == "/" && inVirtualFS("/"+name) != "" {
			return true
		}
		isDir := typ.IsDir()
		var next []uint64 // states to walk a subdirectory with
		first := -1
		for k, p := range g.pats {
			if states[k] == 0 {
				continue
			}
			st := step(p.segs, states[k], name)
			if st&final(p.segs) != 0 && first < 0 {
				first = k
			}
			if st &^= final(p.segs); st != 0 && isDir {
				if next == nil {
					next = make([]uint64, len(states))
				}
				next[k] = st
			}
		}
		if first < 0 && next == nil {
			return true
		}
		path := dir + "/" + name
		if dir == "/" {
			path = "/" + name
		}
		if first >= 0 {
			if err := w.report(g, path, typ, g.pats[first].order, g.pats[first].entry); err != nil {
				w.fail(err)
				return false
			}
			return true
		}
		if depth+1 > w.lim.MaxDepth {
			w.fail(&LimitError{Limit: "MaxDepth", Value: w.lim.MaxDepth, Globs: g.globs, Dir: path})
			return false
		}
		select {
		case w.sem <- struct{}{}:
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				defer func() { <-w.sem }()
				w.walkDir(g, path, depth+1, next)
			}()
		default:
			w.walkDir(g, path, depth+1, next)
		}
		return true
	})
	// Entries are counted per directory: one shared counter bumped per
	// entry would bounce between the cores.
	if w.visited.Add(visited) > int64(w.lim.MaxVisited) {
		w.fail(&LimitError{Limit: "MaxVisited", Value: w.lim.MaxVisited, Globs: g.globs, Dir: dir})
		return
	}
	if isNotExist(err) {
		return // removed while walking: nothing to hide
	}
	if err != nil {
		if outOfReach(dir) {
			// Another user's directory you cannot even search (a
			// database's 0700 data directory from docker compose): nothing
			// in it can be opened by you, inside the sandbox or out, and
			// you cannot chmod it back.
			return
		}
		w.fail(fmt.Errorf("deny globs %s: cannot read directory %q: %v; a glob must see every directory it could match in: make it readable (chmod u+rx %q, yours to chmod back from a sandbox), or anchor the glob away from it",
			quoteAll(g.globs), dir, err, dir))
		return
	}
}

// outOfReach reports whether dir is another user's directory that you may
// not search (no execute permission for you): then no file below it can
// be reached by any process of yours, and a glob may pass it by. A
// directory of yours, or one you may search though not list (0711, where
// a known name still opens), is not.
func outOfReach(dir string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	if int(st.Uid) == os.Geteuid() || os.Geteuid() == 0 {
		return false
	}
	return unix.Access(dir, unix.X_OK) != nil
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// dedupe sorts by path and keeps, for each path, the entry first in input
// order.
func dedupe(all []found) []Match {
	slices.SortFunc(all, func(a, b found) int {
		if c := strings.Compare(a.m.Path, b.m.Path); c != 0 {
			return c
		}
		return a.order - b.order
	})
	var out []Match
	for i, f := range all {
		if i > 0 && all[i-1].m.Path == f.m.Path {
			continue
		}
		out = append(out, f.m)
	}
	return out
}
