package sbpl

// A checker for the SBPL this package writes: a small s-expression reader,
// a validator that knows every form the renderer may use and nothing else,
// and an evaluator that answers "would Seatbelt allow this operation on this
// path" the way Seatbelt orders rules. macOS cannot run here, so this is what
// stands between a typo and a broken (or open) sandbox.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type kind int

const (
	kList kind = iota
	kSymbol
	kString
	kRegex
	kNumber
)

type node struct {
	kind kind
	text string // symbol name, string value, regex source, number
	list []*node
	off  int
}

func (n *node) head() string {
	if n.kind != kList || len(n.list) == 0 || n.list[0].kind != kSymbol {
		return ""
	}
	return n.list[0].text
}

// readSBPL parses the whole text into top-level forms. It accepts lists,
// symbols, numbers, "strings" with only \" and \\ escapes, #"regex" literals
// read raw up to the next '"', and ; comments.
func readSBPL(src string) ([]*node, error) {
	var stack [][]*node
	var top []*node
	add := func(n *node) {
		if len(stack) == 0 {
			top = append(top, n)
		} else {
			stack[len(stack)-1] = append(stack[len(stack)-1], n)
		}
	}
	var opens []int
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '(':
			stack = append(stack, nil)
			opens = append(opens, i)
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("offset %d: unbalanced ')'", i)
			}
			items := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			off := opens[len(opens)-1]
			opens = opens[:len(opens)-1]
			add(&node{kind: kList, list: items, off: off})
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
					if j == len(src) || (src[j] != '"' && src[j] != '\\') {
						return nil, fmt.Errorf("offset %d: unknown string escape", j)
					}
				}
				b.WriteByte(src[j])
			}
			if j == len(src) {
				return nil, fmt.Errorf("offset %d: unterminated string", i)
			}
			add(&node{kind: kString, text: b.String(), off: i})
			i = j + 1
		case c == '#':
			if i+1 >= len(src) || src[i+1] != '"' {
				return nil, fmt.Errorf("offset %d: '#' not followed by '\"'", i)
			}
			end := strings.IndexByte(src[i+2:], '"')
			if end < 0 {
				return nil, fmt.Errorf("offset %d: unterminated regex literal", i)
			}
			add(&node{kind: kRegex, text: src[i+2 : i+2+end], off: i})
			i += 2 + end + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			add(&node{kind: kNumber, text: src[i:j], off: i})
			i = j
		case isSymbolByte(c):
			j := i
			for j < len(src) && isSymbolByte(src[j]) {
				j++
			}
			add(&node{kind: kSymbol, text: src[i:j], off: i})
			i = j
		default:
			return nil, fmt.Errorf("offset %d: unexpected byte %q", i, c)
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("offset %d: unclosed '('", opens[len(opens)-1])
	}
	return top, nil
}

func isSymbolByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-*_.?!", c) >= 0
}

// knownOps maps every operation the renderer may use to the kind of filter
// it takes.
var knownOps = map[string]string{
	"default":                 "",
	"file-read*":              "path",
	"file-read-data":          "path",
	"file-read-metadata":      "path",
	"file-write*":             "path",
	"file-write-data":         "path",
	"file-write-create":       "path",
	"file-write-unlink":       "path",
	"file-ioctl":              "path",
	"process-exec":            "path",
	"process-fork":            "",
	"process-info*":           "target",
	"signal":                  "target",
	"sysctl-read":             "",
	"mach-lookup":             "mach",
	"ipc-posix-shm*":          "ipc",
	"ipc-posix-shm-read*":     "ipc",
	"ipc-posix-shm-read-data": "ipc",
	"ipc-posix-sem":           "ipc",
	"pseudo-tty":              "",
	"network*":                "",
	"network-outbound":        "",
}

// knownFilters maps each leaf filter to its kind.
var knownFilters = map[string]string{
	"literal":        "path",
	"subpath":        "path",
	"prefix":         "path",
	"regex":          "path",
	"global-name":    "mach",
	"ipc-posix-name": "ipc",
	"target":         "target",
}

type rule struct {
	allow   bool
	ops     []string
	filters []*node // none: the rule applies to every use of its operations
	line    string
}

type profile struct {
	rules  []rule
	params map[string]string
	res    map[string]*regexp.Regexp
}

// check validates text against params and returns it ready to evaluate.
func check(text string, params map[string]string) (*profile, error) {
	forms, err := readSBPL(text)
	if err != nil {
		return nil, err
	}
	pr := &profile{params: params, res: map[string]*regexp.Regexp{}}
	used := map[string]bool{}
	if len(forms) < 2 || forms[0].head() != "version" || len(forms[0].list) != 2 || forms[0].list[1].text != "1" {
		return nil, fmt.Errorf("the profile must start with (version 1)")
	}
	for i, f := range forms[1:] {
		h := f.head()
		if h != "allow" && h != "deny" {
			return nil, fmt.Errorf("offset %d: top-level form %q is not allow or deny", f.off, h)
		}
		r := rule{allow: h == "allow", line: snippet(text, f.off)}
		args := f.list[1:]
		for len(args) > 0 && args[0].kind == kSymbol {
			if _, ok := knownOps[args[0].text]; !ok {
				return nil, fmt.Errorf("%s: unknown operation %q", r.line, args[0].text)
			}
			r.ops = append(r.ops, args[0].text)
			args = args[1:]
		}
		if len(r.ops) == 0 {
			return nil, fmt.Errorf("%s: no operation", r.line)
		}
		if i == 0 && (r.allow || len(r.ops) != 1 || r.ops[0] != "default" || len(args) != 0) {
			return nil, fmt.Errorf("%s: the first rule must be (deny default)", r.line)
		}
		if i > 0 && r.ops[0] == "default" {
			return nil, fmt.Errorf("%s: default appears after the first rule", r.line)
		}
		// Action modifiers ((with message "..."), the form sandbox-runtime's
		// rules use, after the filters) change the report, not the match.
		var filters []*node
		for _, a := range args {
			if a.head() != "with" {
				filters = append(filters, a)
				continue
			}
			if err := checkModifier(a); err != nil {
				return nil, fmt.Errorf("%s: %v", r.line, err)
			}
		}
		args = filters
		for _, a := range args {
			for _, op := range r.ops {
				want := knownOps[op]
				if want == "" {
					return nil, fmt.Errorf("%s: operation %s takes no filter", r.line, op)
				}
				if err := pr.checkFilter(a, want, used); err != nil {
					return nil, fmt.Errorf("%s: %v", r.line, err)
				}
			}
		}
		r.filters = args
		// Seatbelt implementations differ on whether an unfiltered rule
		// after a filtered one for the same operation overrides it. The
		// renderer never relies on either reading: an unfiltered rule
		// always comes before every filtered rule it overlaps.
		if len(args) == 0 {
			for _, prev := range pr.rules {
				if len(prev.filters) > 0 && overlap(prev.ops, r.ops) {
					return nil, fmt.Errorf("%s: unfiltered rule after the filtered rule %s", r.line, prev.line)
				}
			}
		}
		pr.rules = append(pr.rules, r)
	}
	for k := range params {
		if !used[k] {
			return nil, fmt.Errorf("parameter %s is defined but never used", k)
		}
	}
	return pr, nil
}

func snippet(text string, off int) string {
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text) - off
	}
	return text[off : off+end]
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if covers(x, y) || covers(y, x) {
				return true
			}
		}
	}
	return false
}

// checkModifier accepts (with message "TEXT"), (with report) and (with
// no-report).
func checkModifier(f *node) error {
	if len(f.list) < 2 || f.list[1].kind != kSymbol {
		return fmt.Errorf("bad modifier")
	}
	switch f.list[1].text {
	case "message":
		if len(f.list) != 3 || f.list[2].kind != kString || f.list[2].text == "" {
			return fmt.Errorf("(with message) takes one non-empty string")
		}
		return nil
	case "report", "no-report":
		if len(f.list) != 2 {
			return fmt.Errorf("(with %s) takes nothing", f.list[1].text)
		}
		return nil
	}
	return fmt.Errorf("unknown modifier %q", f.list[1].text)
}

// covers reports whether a rule for op applies to the concrete operation q.
func covers(op, q string) bool {
	if op == "default" || op == q {
		return true
	}
	return strings.HasSuffix(op, "*") && strings.HasPrefix(q, strings.TrimSuffix(op, "*"))
}

func (pr *profile) checkFilter(f *node, want string, used map[string]bool) error {
	h := f.head()
	switch h {
	case "require-any", "require-all":
		if len(f.list) < 2 {
			return fmt.Errorf("empty %s", h)
		}
		for _, a := range f.list[1:] {
			if err := pr.checkFilter(a, want, used); err != nil {
				return err
			}
		}
		return nil
	case "require-not":
		if len(f.list) != 2 {
			return fmt.Errorf("require-not takes one filter")
		}
		return pr.checkFilter(f.list[1], want, used)
	}
	k, ok := knownFilters[h]
	if !ok {
		return fmt.Errorf("unknown filter %q", h)
	}
	if k != want {
		return fmt.Errorf("filter %s does not apply to a %s operation", h, want)
	}
	if len(f.list) != 2 {
		return fmt.Errorf("%s takes one argument", h)
	}
	arg := f.list[1]
	switch h {
	case "target":
		if arg.kind != kSymbol || (arg.text != "same-sandbox" && arg.text != "self") {
			return fmt.Errorf("unknown target %q", arg.text)
		}
	case "regex":
		if arg.kind != kRegex {
			return fmt.Errorf("regex takes a #\"...\" literal")
		}
		if !strings.HasPrefix(arg.text, "^") || !strings.HasSuffix(arg.text, "$") {
			return fmt.Errorf("regex %q is not anchored with ^...$", arg.text)
		}
		re, err := regexp.CompilePOSIX(latin1(arg.text))
		if err != nil {
			return fmt.Errorf("regex %q is not a POSIX ERE: %v", arg.text, err)
		}
		pr.res[arg.text] = re
	default:
		s, err := pr.str(arg, used)
		if err != nil {
			return err
		}
		if (h == "literal" || h == "subpath") && (!filepath.IsAbs(s) || filepath.Clean(s) != s) {
			return fmt.Errorf("%s %q is not an absolute, clean path", h, s)
		}
	}
	return nil
}

// str evaluates a string expression: a string, (param "X") or
// (string-append ...).
func (pr *profile) str(n *node, used map[string]bool) (string, error) {
	switch {
	case n.kind == kString:
		return n.text, nil
	case n.head() == "param":
		if len(n.list) != 2 || n.list[1].kind != kString {
			return "", fmt.Errorf("param takes one string")
		}
		v, ok := pr.params[n.list[1].text]
		if !ok {
			return "", fmt.Errorf("parameter %q is not defined", n.list[1].text)
		}
		if used != nil {
			used[n.list[1].text] = true
		}
		return v, nil
	case n.head() == "string-append":
		var b strings.Builder
		for _, a := range n.list[1:] {
			s, err := pr.str(a, used)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("not a string expression")
}

// latin1 maps each byte to the rune of the same value, so that Go's
// rune-based regexp matches byte by byte, as Seatbelt does, and raw
// non-UTF-8 bytes in a pattern compile.
func latin1(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

// decide evaluates op on path (path "" for operations without one): the
// last rule that covers the operation and whose filter matches wins. The
// check above guarantees no unfiltered rule follows a filtered one it
// overlaps, so this is also "the last matching filtered rule wins, else the
// unfiltered one".
func (pr *profile) decide(op, path string) (allow bool, by string) {
	allow, by = false, "(no rule)"
	for _, r := range pr.rules {
		hit := false
		for _, o := range r.ops {
			hit = hit || covers(o, op)
		}
		if !hit {
			continue
		}
		if len(r.filters) > 0 {
			matched := false
			for _, f := range r.filters {
				matched = matched || pr.match(f, path)
			}
			if !matched {
				continue
			}
		}
		allow, by = r.allow, r.line
	}
	return allow, by
}

func (pr *profile) match(f *node, path string) bool {
	switch f.head() {
	case "require-any":
		for _, a := range f.list[1:] {
			if pr.match(a, path) {
				return true
			}
		}
		return false
	case "require-all":
		for _, a := range f.list[1:] {
			if !pr.match(a, path) {
				return false
			}
		}
		return true
	case "require-not":
		return !pr.match(f.list[1], path)
	case "regex":
		return path != "" && pr.res[f.list[1].text].MatchString(latin1(path))
	case "literal", "subpath", "prefix":
		if path == "" {
			return false
		}
		s, _ := pr.str(f.list[1], nil)
		switch f.head() {
		case "literal":
			return path == s
		case "subpath":
			return path == s || strings.HasPrefix(path, strings.TrimSuffix(s, "/")+"/")
		}
		return strings.HasPrefix(path, s)
	}
	// Non-path filters (global-name, target, ...) never match a path query.
	return false
}

// TestCheckerRejects shows the checker can fail: each broken profile is
// refused for the reason given.
func TestCheckerRejects(t *testing.T) {
	const head = "(version 1)\n(deny default)\n"
	cases := []struct {
		name, text string
		params     map[string]string
		want       string
	}{
		{"unbalanced", head + "(allow file-read*", nil, "unclosed"},
		{"unknown modifier", head + "(deny file-read* (subpath \"/a\") (with mesage \"x\"))", nil, "unknown modifier"},
		{"empty message", head + "(deny file-read* (subpath \"/a\") (with message))", nil, "one non-empty string"},
		{"extra paren", head + "(allow file-read*))", nil, "unbalanced"},
		{"no version", "(deny default)", nil, "version"},
		{"allow default", "(version 1)\n(allow default)", nil, "(deny default)"},
		{"unknown op", head + "(allow file-read-everything)", nil, "unknown operation"},
		{"unknown filter", head + `(allow file-read* (path "/x"))`, nil, "unknown filter"},
		{"wrong filter kind", head + `(allow mach-lookup (literal "/x"))`, nil, "does not apply"},
		{"undefined param", head + `(allow file-read* (subpath (param "WORKSPACE")))`, nil, "not defined"},
		{"unused param", head + `(allow file-read*)`, map[string]string{"HOME": "/h"}, "never used"},
		{"bad regex", head + `(allow file-read* (regex #"^/a(b$"))`, nil, "not a POSIX ERE"},
		{"unanchored regex", head + `(allow file-read* (regex #"\.env"))`, nil, "anchored"},
		{"relative path", head + `(allow file-read* (subpath "a/b"))`, nil, "absolute"},
		{"bad escape", head + `(allow file-read* (literal "/a\n"))`, nil, "escape"},
		{"unfiltered after filtered", head + "(deny file-write* (subpath \"/a\"))\n(allow file-write*)", nil, "unfiltered rule after"},
		{"wildcard overlap", head + "(deny file-read-data (subpath \"/a\"))\n(allow file-read*)", nil, "unfiltered rule after"},
	}
	for _, c := range cases {
		_, err := check(c.text, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestCheckerDecides pins the evaluator's reading of rule order on a small
// hand-written profile.
func TestCheckerDecides(t *testing.T) {
	text := `(version 1)
(deny default)
(allow file-read*)
(allow file-write* (subpath (param "WORKSPACE")))
(deny file-write* (subpath (string-append (param "WORKSPACE") "/ro")))
(deny file-read* file-write* (regex #"^/w(/[^/]+)*/\.env(/[^/]+)*$"))
(deny file-write-unlink (literal "/w"))
`
	pr, err := check(text, map[string]string{"WORKSPACE": "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op, path string
		want     bool
	}{
		{"file-read-data", "/etc/hosts", true},
		{"file-write-data", "/etc/hosts", false},
		{"file-write-data", "/w/a", true},
		{"file-write-data", "/w/ro/a", false},
		{"file-write-data", "/wx", false},
		{"file-read-data", "/w/a/.env", false},
		{"file-read-data", "/w/a/.env/x", false},
		{"file-read-data", "/w/a/x.env", true},
		{"file-write-unlink", "/w", false},
		{"file-write-unlink", "/w/a", true},
		{"network-outbound", "", false},
	} {
		if got, by := pr.decide(c.op, c.path); got != c.want {
			t.Errorf("%s %s: got %v (by %s), want %v", c.op, c.path, got, by, c.want)
		}
	}
}
