package verbs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"
	"grok-sandbox/launcher"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
)

// row is one line of explain's paths table: what a path (and everything
// below it that no deeper row names) is in the sandbox, why, and which
// profile or file said so.
type row struct {
	path, access, why, from string
}

// pathRows lists every path the policy names: the root, the grants, the
// links, the hook-protected paths, the masks, the pinned directories and,
// under bwrap, the fresh /dev and /proc. A pinned directory that already
// has a row gets the pin added to it rather than a row of its own.
func pathRows(plan *launcher.Plan) []row {
	p := plan.Policy
	base := "built-in " + p.Base
	var rows []row
	granted := map[string]bool{}
	for _, g := range p.Grants {
		granted[g.Path] = true
	}
	if !granted["/"] {
		if p.ReadAll {
			rows = append(rows, row{"/", policy.Read.String(), "the whole file system is readable", base})
		} else {
			rows = append(rows, row{"/", policy.Hidden.String(), "nothing is there but the paths below", base})
		}
	}
	for _, g := range p.Grants {
		why := g.Why
		if acc := p.AccessAt(g.Path); acc != g.Access {
			why += fmt.Sprintf("; asked %s, %s wins", g.Access, acc)
		}
		rows = append(rows, row{g.Path, p.AccessAt(g.Path).String(), why, g.Source})
	}
	for _, l := range p.Links {
		rows = append(rows, row{l.Path, "link", "-> " + l.Target + ", as on the host", base})
	}
	for _, q := range p.Protected {
		why := "protected"
		if w := p.ProtectedWhy[q]; w != "" {
			why += ": " + w
		}
		rows = append(rows, row{q, p.AccessAt(q).String(), why, "hook protection"})
	}
	ruleFrom := map[string]string{}
	for _, d := range p.Deny {
		ruleFrom[d.Entry] = d.Source
	}
	for _, m := range p.Masks {
		from := ruleFrom[m.Entry]
		if from == p.Requirements && from != "" {
			// The administrator's entries: the file and the line.
			from = m.Source
		}
		rows = append(rows, row{m.Path, "denied", fmt.Sprintf("deny %q", m.Entry), from})
	}
	for _, d := range p.Pinned {
		why := "cannot be renamed (protects " + pinnedFor(p, d) + ")"
		if i := slicesIndex(rows, d); i >= 0 {
			rows[i].why += "; " + why
			continue
		}
		from := "hook protection"
		if !protectsAny(p.Protected, d) {
			from = "deny rules"
			if !masksAny(p.Masks, d) {
				from = "read_only entries"
			}
		}
		rows = append(rows, row{d, p.AccessAt(d).String(), why, from})
	}
	if p.Enforce && p.Target == "linux" && plan.Backend == launcher.BackendBwrap {
		rows = append(rows, row{"/dev", "read-write", "fresh, not the host's: null, zero, full, random, urandom, tty, pts, shm", "every sandbox"})
		if p.NestedUserNS {
			rows = append(rows, row{"/proc", "read-write", "fresh: this sandbox's processes only (nested user namespaces need it writable)", "every sandbox"})
			for _, k := range []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"} {
				rows = append(rows, row{k, "read-only", "the host kernel's settings", "every sandbox"})
			}
		} else {
			rows = append(rows, row{"/proc", "read-only", "fresh: this sandbox's processes only", "every sandbox"})
		}
	}
	// Sorted by path, each child right under its parent: "/" sorts before
	// every other byte.
	key := func(path string) string { return strings.ReplaceAll(path, "/", "\x00") }
	sort.SliceStable(rows, func(i, j int) bool { return key(rows[i].path) < key(rows[j].path) })
	return rows
}

func slicesIndex(rows []row, path string) int {
	for i, r := range rows {
		if r.path == path {
			return i
		}
	}
	return -1
}

func protectsAny(protected []string, dir string) bool {
	for _, q := range protected {
		if q != dir && policy.Within(q, dir) {
			return true
		}
	}
	return false
}

// pinnedFor says what renaming the pinned directory dir would move away:
// the protected, masked and read_only entries right in it by name, or how
// many such paths lie deeper below it.
func pinnedFor(p *policy.Policy, dir string) string {
	var below []string
	direct := true
	seen := map[string]bool{}
	add := func(path string) {
		if path != dir && policy.Within(path, dir) && !seen[path] {
			seen[path] = true
			rel, err := filepath.Rel(dir, path)
			if err != nil || strings.Contains(rel, "/") {
				direct = false
			}
			below = append(below, rel)
		}
	}
	for _, q := range p.Protected {
		add(q)
	}
	for _, m := range p.Masks {
		add(m.Path)
	}
	for _, g := range p.Grants {
		if g.Access == policy.Read && g.Why == "read_only entry" {
			add(g.Path)
		}
	}
	switch {
	case len(below) == 0:
		return "nothing below it"
	case !direct && len(below) == 1:
		return "1 path below"
	case !direct:
		return fmt.Sprintf("%d paths below", len(below))
	case len(below) == 1:
		return below[0]
	case len(below) == 2:
		return below[0] + " and " + below[1]
	}
	return fmt.Sprintf("%s, %s and %d more", below[0], below[1], len(below)-2)
}

// writeTable writes the rows as aligned columns, each path indented two
// spaces more than the nearest listed path above it.
func writeTable(w io.Writer, rows []row) {
	if width := termWidth(w); width > 0 {
		writeTableWrapped(w, rows, width)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PATH\tACCESS\tWHY\tFROM")
	depth := indents(rows)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\n", strings.Repeat("  ", depth[r.path]), cell(r.path), r.access, cell(r.why), cell(r.from))
	}
	tw.Flush()
}

// indents is each row's depth in the tree of paths.
func indents(rows []row) map[string]int {
	depth := map[string]int{}
	for _, r := range rows {
		d := 0
		for dir := r.path; dir != "/"; {
			dir = filepath.Dir(dir)
			if n, ok := depth[dir]; ok {
				d = n + 1
				break
			}
		}
		if _, ok := depth[r.path]; !ok {
			depth[r.path] = d
		}
	}
	return depth
}

// termWidth is the width to wrap explain's table to: COLUMNS when it is a
// number, else the terminal's when w is one; 0: do not wrap (a pipe, a
// file).
func termWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 0
}

// writeTableWrapped lays the table out in width columns: PATH, ACCESS and
// FROM as wide as they need, WHY wrapped in what is left (at least 20),
// its further lines under it.
func writeTableWrapped(w io.Writer, rows []row, width int) {
	depth := indents(rows)
	type line struct{ path, access, why, from string }
	lines := []line{{"PATH", "ACCESS", "WHY", "FROM"}}
	for _, r := range rows {
		lines = append(lines, line{strings.Repeat("  ", depth[r.path]) + cell(r.path), r.access, cell(r.why), cell(r.from)})
	}
	pw, aw, fw := 0, 0, 0
	for _, l := range lines {
		pw, aw, fw = max(pw, len([]rune(l.path))), max(aw, len(l.access)), max(fw, len([]rune(l.from)))
	}
	ww := max(20, width-2-pw-2-aw-2-2-fw)
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-len([]rune(s)))) }
	for _, l := range lines {
		parts := wrapWords(l.why, ww)
		fmt.Fprintf(w, "  %s  %s  %s  %s\n", pad(l.path, pw), pad(l.access, aw), pad(parts[0], ww), l.from)
		for _, more := range parts[1:] {
			fmt.Fprintf(w, "  %s  %s  %s\n", strings.Repeat(" ", pw), strings.Repeat(" ", aw), more)
		}
	}
}

// wrapWords breaks s into lines of at most n runes, at spaces where it can.
func wrapWords(s string, n int) []string {
	var out []string
	for len([]rune(s)) > n {
		r := []rune(s)
		cut := strings.LastIndex(string(r[:n+1]), " ")
		if cut <= 0 {
			cut = len(string(r[:n]))
			out = append(out, s[:cut])
			s = s[cut:]
			continue
		}
		out = append(out, s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}

// cell is a table cell: printable, and without a tab that would split it.
func cell(s string) string {
	return strings.ReplaceAll(printable.String(s), "\t", `\t`)
}

func masksAny(masks []policy.Mask, dir string) bool {
	for _, m := range masks {
		if m.Path != dir && policy.Within(m.Path, dir) {
			return true
		}
	}
	return false
}
