// Package envpolicy implements [shell_environment_policy] (grok-sandbox help environment): it
// decides which environment variables the sandboxed command inherits, so
// that a tool run by an agent cannot read a secret that merely sits in the
// user's shell environment.
//
// Rules are applied in this fixed order:
//
//  1. inherit: "all" keeps every variable, "core" keeps only the platform
//     core set (see CorePatterns), "none" starts empty.
//  2. Unless IgnoreDefaultExcludes is true, drop names matching the default
//     secret patterns *KEY*, *SECRET*, *TOKEN*.
//  3. Drop every name matching a pattern in Exclude.
//  4. Apply Set (a set name is kept even if steps 1-3 dropped it).
//  5. If IncludeOnly is non-empty, keep only names matching one of its
//     patterns; this also filters names added by Set.
//  6. Apply the launcher's forced variables (GROK_SANDBOX_PROFILE,
//     GROK_SANDBOX_BACKEND, ...) which no policy rule can remove or change.
//
// Patterns are case-insensitive globs that match the whole name; '*' matches
// any run of characters (including none) and '?' exactly one character.
// No other metacharacters exist: a pattern may only contain ASCII letters,
// digits, '_', '.', '-', '*' and '?'.
//
// Name identity is exact (on Unix PATH and Path are two variables); only
// pattern matching folds case. Decisions record names and reasons, never
// values.
package envpolicy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Inherit modes.
const (
	InheritAll  = "all"
	InheritCore = "core"
	InheritNone = "none"
)

// Decision actions.
const (
	ActionKept    = "kept"
	ActionDropped = "dropped"
	ActionSet     = "set"
	ActionForced  = "forced"
)

// Rules is the parsed [shell_environment_policy] section.
//
// Defaults: with no section at all the policy is Default(), which leaves the
// environment unchanged. When the section exists but omits a key, that key
// keeps its Default() value; in particular ignore_default_excludes defaults
// to TRUE, so the default secret patterns apply only when the user writes
// ignore_default_excludes = false. A config loader must therefore start from
// Default() and overlay the keys present; note that the Go zero value
// Rules{} has IgnoreDefaultExcludes=false and so is NOT the default.
type Rules struct {
	Inherit               string // "all", "core", "none"; "" means "all"
	IgnoreDefaultExcludes bool
	Exclude               []string
	IncludeOnly           []string
	Set                   map[string]string
}

// Default returns the policy used when the config has no
// [shell_environment_policy] section: inherit = "all",
// ignore_default_excludes = true, no exclude, include_only or set. Applying
// it leaves the environment unchanged (apart from the normalisation
// described on Apply).
func Default() Rules {
	return Rules{Inherit: InheritAll, IgnoreDefaultExcludes: true}
}

// defaultExcludes are the secret patterns dropped unless
// IgnoreDefaultExcludes is true.
var defaultExcludes = []string{"*KEY*", "*SECRET*", "*TOKEN*"}

// commonCore is the core set shared by every platform. It is deliberately
// minimal: no DISPLAY, WAYLAND_DISPLAY, DBUS_SESSION_BUS_ADDRESS,
// SSH_AUTH_SOCK or XDG_RUNTIME_DIR, since each names a socket that is a way
// out of the sandbox.
var commonCore = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
	"LANG", "LANGUAGE", "LC_*", "TMPDIR", "TZ", "PWD",
}

// CorePatterns returns the names (and the one pattern LC_*) kept by
// inherit = "core" on platform:
//
//   - every platform: PATH, HOME, USER, LOGNAME, SHELL, TERM, COLORTERM,
//     LANG, LANGUAGE, LC_* (pattern), TMPDIR, TZ, PWD
//   - "darwin" adds: __CF_USER_TEXT_ENCODING
//   - "linux" adds nothing; any other platform string gets the common set.
//
// The returned slice is a fresh copy.
func CorePatterns(platform string) []string {
	out := append([]string(nil), commonCore...)
	if platform == "darwin" {
		out = append(out, "__CF_USER_TEXT_ENCODING")
	}
	return out
}

// FieldError is one problem in a Policy: the key it is in, the index of the
// list entry (-1 for a key that is no list), and what is wrong.
type FieldError struct {
	Key   string
	Index int
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("%s[%d] %s", e.Key, e.Index, e.Msg)
	}
	return e.Key + " " + e.Msg
}

// Validate reports every problem in p, joined, each a *FieldError naming the
// offending key, e.g. `exclude[2] "A[B": invalid character '[' in pattern`.
// The caller adds file:line. Values of Set are never quoted in errors.
func (p Rules) Validate() error {
	var errs []error
	add := func(key string, index int, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Index: index, Msg: fmt.Sprintf(format, args...)})
	}
	switch p.Inherit {
	case "", InheritAll, InheritCore, InheritNone:
	default:
		add("inherit", -1, "%q: must be one of %q, %q, %q", p.Inherit, InheritAll, InheritCore, InheritNone)
	}
	for i, pat := range p.Exclude {
		if err := checkPattern(pat); err != nil {
			add("exclude", i, "%q: %v", pat, err)
		}
	}
	for i, pat := range p.IncludeOnly {
		if err := checkPattern(pat); err != nil {
			add("include_only", i, "%q: %v", pat, err)
		}
	}
	for _, k := range sortedKeys(p.Set) {
		switch {
		case k == "":
			add("set", -1, `key "": empty variable name`)
		case strings.ContainsRune(k, '='):
			add("set", -1, "key %q: variable name contains '='", k)
		case strings.ContainsRune(k, 0):
			add("set", -1, "key %q: variable name contains NUL", k)
		case !utf8.ValidString(k):
			add("set", -1, "key %q: variable name is not valid UTF-8", k)
		}
		if strings.ContainsRune(p.Set[k], 0) {
			add("set", -1, "key %q: value contains NUL", k)
		}
	}
	return errors.Join(errs...)
}

func checkPattern(pat string) error {
	if pat == "" {
		return errors.New("empty pattern")
	}
	for _, r := range pat {
		if !isPatternChar(r) {
			return fmt.Errorf("invalid character %q in pattern (allowed: letters, digits, '_', '.', '-', '*', '?')", r)
		}
	}
	return nil
}

func isPatternChar(r rune) bool {
	switch {
	case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("_.-*?", r)
}

// Decision explains what happened to one variable name. It never carries a
// value.
type Decision struct {
	Name   string
	Action string // "kept", "dropped", "set", "forced"
	Reason string // e.g. "inherit=core", "default exclude *KEY*", "exclude ACME_*", "not in include_only", "set"
}

// Result is the outcome of Apply.
type Result struct {
	Env       []string   // final KEY=VALUE list, sorted by name, for exec
	Decisions []Decision // one per name involved, sorted by name; names only, never values
}

type entry struct {
	value  string
	alive  bool
	action string
	reason string
}

// Apply computes the environment of the wrapped command from environ (as
// from os.Environ) under policy p on platform ("linux" or "darwin"), then
// applies forced, the launcher's own variables, which override everything
// and are never removed.
//
// p should have passed Validate. Apply fails closed on an invalid policy: an
// unknown Inherit is treated as "none", and a malformed pattern matches only
// names equal to it (case-insensitively, with '*' and '?' still wildcards).
//
// Normalisation of environ: entries without '=' and entries with an empty
// name (e.g. "=C:") are dropped and, since such an entry might itself be a
// secret, are not reported in Decisions. For a duplicated name the FIRST
// occurrence wins, like getenv(3) and Go's os.Getenv; later ones are
// discarded. Each name appears at most once in Env, which is sorted by name,
// so Default() reproduces environ exactly when it is already sorted and
// free of duplicates and malformed entries.
//
// Forced keys come from the launcher, not the user; a forced key that is
// empty or contains '=' or NUL cannot be exported and is reported as
// dropped ("invalid forced name") instead.
func Apply(environ []string, p Rules, platform string, forced map[string]string) Result {
	vars := map[string]*entry{}
	var order []string
	add := func(name string) *entry {
		e := &entry{}
		vars[name] = e
		order = append(order, name)
		return e
	}

	inherit := p.Inherit
	if inherit == "" {
		inherit = InheritAll
	}
	var core []string
	if inherit == InheritCore {
		core = CorePatterns(platform)
	}

	// 1. inherit.
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, dup := vars[name]; dup {
			continue // first occurrence wins
		}
		e := add(name)
		e.value = value
		switch inherit {
		case InheritAll:
			e.alive, e.action, e.reason = true, ActionKept, "inherit=all"
		case InheritCore:
			if matchAny(core, name) != "" {
				e.alive, e.action, e.reason = true, ActionKept, "inherit=core"
			} else {
				e.action, e.reason = ActionDropped, "inherit=core"
			}
		case InheritNone:
			e.action, e.reason = ActionDropped, "inherit=none"
		default:
			e.action, e.reason = ActionDropped, fmt.Sprintf("invalid inherit %q", inherit)
		}
	}

	// 2. default excludes, 3. exclude.
	for _, name := range order {
		e := vars[name]
		if !e.alive {
			continue
		}
		if !p.IgnoreDefaultExcludes {
			if pat := matchAny(defaultExcludes, name); pat != "" {
				e.alive, e.action, e.reason = false, ActionDropped, "default exclude "+pat
				continue
			}
		}
		if pat := matchAny(p.Exclude, name); pat != "" {
			e.alive, e.action, e.reason = false, ActionDropped, "exclude "+pat
		}
	}

	// 4. set.
	for _, name := range sortedKeys(p.Set) {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			continue // rejected by Validate; cannot be exported
		}
		e, ok := vars[name]
		if !ok {
			e = add(name)
		}
		reason := "set"
		if ok && e.action == ActionDropped {
			reason = "set (overrides " + e.reason + ")"
		}
		e.value, e.alive, e.action, e.reason = p.Set[name], true, ActionSet, reason
	}

	// 5. include_only.
	if len(p.IncludeOnly) > 0 {
		for _, name := range order {
			e := vars[name]
			if e.alive && matchAny(p.IncludeOnly, name) == "" {
				e.alive, e.action, e.reason = false, ActionDropped, "not in include_only"
			}
		}
	}

	// 6. forced.
	for _, name := range sortedKeys(forced) {
		e, ok := vars[name]
		if !ok {
			e = add(name)
		}
		if name == "" || strings.ContainsAny(name, "=\x00") || strings.ContainsRune(forced[name], 0) {
			e.value, e.alive, e.action, e.reason = "", false, ActionDropped, "invalid forced name"
			continue
		}
		e.value, e.alive, e.action, e.reason = forced[name], true, ActionForced, "launcher"
	}

	sort.Strings(order)
	res := Result{Env: []string{}, Decisions: make([]Decision, 0, len(order))}
	for _, name := range order {
		e := vars[name]
		if e.alive {
			res.Env = append(res.Env, name+"="+e.value)
		}
		res.Decisions = append(res.Decisions, Decision{Name: name, Action: e.action, Reason: e.reason})
	}
	return res
}

// matchAny returns the first pattern in pats matching name, or "".
func matchAny(pats []string, name string) string {
	for _, p := range pats {
		if match(p, name) {
			return p
		}
	}
	return ""
}

// match reports whether the case-insensitive glob pat matches all of name.
// '*' matches any run of characters, '?' exactly one character (rune).
func match(pat, name string) bool {
	p := []rune(strings.ToUpper(pat))
	n := []rune(strings.ToUpper(name))
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[ni]):
			pi++
			ni++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ni
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Getenv is the value of key in environ (as from os.Environ), "" when it is
// not set; the first occurrence wins, as in Apply.
func Getenv(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
