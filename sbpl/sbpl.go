// Package sbpl renders a resolved policy as a macOS Seatbelt profile (SBPL
// text) and the -D parameters that go with it, for
//
//	/usr/bin/sandbox-exec -p TEXT -DKEY=VALUE ... -- COMMAND
//
// Render is a pure function: the same policy gives the same text, byte for
// byte, so golden files can pin it. macOS cannot run where this is built,
// so the text is kept to a small set of forms that the tests parse and
// evaluate.
//
// Seatbelt lets the last matching rule that has a filter decide, so the
// order of the profile is the precedence of the policy:
//
//  1. (deny default), then a base that lets programs, shells and terminals
//     run (processes, a few system services, IPC, network unless isolated);
//  2. reads: everything, or only the grants plus stat of their ancestors;
//  3. the layers of the policy, parents before children, each one allowing
//     or denying writes below it, so the most specific grant wins;
//  4. the device nodes every program needs, after the layers so that a
//     read-only /dev (strict) does not take /dev/null away;
//  5. hook protection, then the directories that must not be renamed;
//  6. deny rules, last, so nothing overrides them.
//
// Paths reach the kernel already canonical: the resolver spells them as
// macOS sees them (/private/tmp, not /tmp), so rules here are never written
// for a spelling the kernel would not match.
package sbpl

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"grok-sandbox/globexpand"
	"grok-sandbox/launcher/policy"
)

// SandboxExec is the program that applies the profile.
const SandboxExec = "/usr/bin/sandbox-exec"

// Profile is a rendered Seatbelt profile.
type Profile struct {
	Text string
	// Params are the -D KEY=VALUE definitions the text refers to with
	// (param "KEY"); exactly those, no more.
	Params map[string]string
	// Notes say where macOS enforces less than the policy asks, for explain
	// and status.
	Notes []string
}

// Args returns the full command line: sandbox-exec, the profile, its
// parameters sorted by name, "--" and the command.
func (s Profile) Args(command []string) []string {
	out := []string{SandboxExec, "-p", s.Text}
	keys := make([]string, 0, len(s.Params))
	for k := range s.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, "-D"+k+"="+s.Params[k])
	}
	out = append(out, "--")
	return append(out, command...)
}

// machServices are the system services a sandboxed program may reach, each
// with the reason it is needed. Left out on purpose: launchservicesd (open(1)
// would start applications outside the sandbox), cfprefsd (it writes
// preferences on the caller's behalf, around the file rules), the pasteboard
// and FSEvents.
var machServices = []struct{ name, why string }{
	{"com.apple.system.opendirectoryd.libinfo", "user and group lookups: getpwuid, id, ls -l, ~"},
	{"com.apple.system.opendirectoryd.membership", "group membership checks"},
	{"com.apple.system.notification_center", "notify(3): libc caches, time-zone changes"},
	{"com.apple.system.logger", "syslog(3)"},
	{"com.apple.logd", "os_log"},
	{"com.apple.diagnosticd", "os_log activity tracing"},
	{"com.apple.SecurityServer", "Security.framework: certificates, git's keychain credential helper"},
	{"com.apple.trustd.agent", "TLS certificate trust evaluation"},
}

// devices are the nodes every program opens: they stay readable and
// writable under every profile.
var devices = []string{
	"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/dtracehelper",
}

// ptySlaves matches the terminal devices handed out by /dev/ptmx.
const ptySlaves = `^/dev/ttys[0-9]+$`

// Render returns the Seatbelt profile for p. A policy that does not enforce
// (off) has no profile and is an error, as is anything that cannot be
// written exactly: a renderer fails closed rather than guess.
func Render(p *policy.Policy) (Profile, error) {
	if !p.Enforce {
		return Profile{}, fmt.Errorf("profile %q does not enforce a sandbox; there is no Seatbelt profile to render", p.Profile)
	}
	if err := checkPaths(p); err != nil {
		return Profile{}, err
	}
	w := &writer{params: map[string]string{}}
	for _, r := range []struct{ name, path string }{
		{"WORKSPACE", p.Workspace}, {"GROK_HOME", p.GrokHome}, {"HOME", p.Home},
	} {
		if r.path != "" {
			w.roots = append(w.roots, root(r))
		}
	}

	w.line("; grok-sandbox Seatbelt profile %q (built-in %q, from %q). Generated; do not edit.", p.Profile, p.Base, p.Source)
	w.line("(version 1)")
	w.line("(deny default)")
	base(w, p)
	reads(w, p)
	layers(w, p)
	deviceRules(w)
	protection(w, p)
	if err := denyRules(w, p); err != nil {
		return Profile{}, err
	}

	out := Profile{Text: w.b.String(), Params: w.params}
	if p.Network.RestrictChildren && !p.Network.Isolate {
		out.Notes = append(out.Notes, "restrict_network has no effect on macOS: Seatbelt cannot tell the wrapped command from the processes it starts, so both keep the network")
	}
	return out, nil
}

func base(w *writer, p *policy.Policy) {
	w.line("")
	w.line("; Processes: run programs and fork, and manage only processes of this")
	w.line("; same sandbox (shells send signals to their jobs, ps and top ask about them).")
	w.line("(allow process-exec)")
	w.line("(allow process-fork)")
	w.line("(allow signal (target same-sandbox))")
	w.line("(allow process-info* (target same-sandbox))")
	w.line("")
	w.line("; System information (uname, hw.ncpu, kern.osversion): read-only.")
	w.line("(allow sysctl-read)")
	w.line("")
	w.line("; The few system services that libc, dyld and common tools call.")
	w.line("(allow mach-lookup")
	for i, s := range machServices {
		end := ""
		if i == len(machServices)-1 {
			end = ")"
		}
		w.line("  (global-name %s)%s ; %s", quote(s.name), end, s.why)
	}
	w.line("")
	w.line("; POSIX IPC: the notification center's shared page (read-only) and named")
	w.line("; semaphores (Python multiprocessing, build tools).")
	w.line(`(allow ipc-posix-shm-read* (ipc-posix-name "apple.shm.notification_center"))`)
	w.line("(allow ipc-posix-sem)")
	w.line("")
	w.line("; Terminals: allocate ptys and set raw mode, window size and job control on")
	w.line("; them; dyld's dtrace helper is configured by ioctl too.")
	w.line("(allow pseudo-tty)")
	w.line(`(allow file-ioctl (literal "/dev/tty") (literal "/dev/ptmx") (literal "/dev/dtracehelper") (regex #"%s"))`, ptySlaves)
	w.line("")
	if p.Network.Isolate {
		w.line("; Network: isolated. Nothing allows it, so (deny default) refuses every")
		w.line("; socket operation, for the wrapped command and its children alike.")
	} else {
		w.line("; Network: allowed. restrict_network is a no-op on macOS: Seatbelt cannot")
		w.line("; tell the wrapped command from its children.")
		w.line("(allow network*)")
	}
}

func reads(w *writer, p *policy.Policy) {
	w.line("")
	if p.ReadAll {
		w.line("; Reads: the whole file system; deny rules below take parts of it back.")
		w.line("(allow file-read*)")
		return
	}
	w.line("; Reads: only the granted paths.")
	var paths []string
	for _, g := range p.Grants {
		if g.Access != policy.Hidden {
			paths = append(paths, g.Path)
		}
	}
	paths = dedupe(paths)
	for _, path := range paths {
		w.line("(allow file-read* (subpath %s))", w.path(path))
	}
	var links []string
	for _, l := range p.Links {
		links = append(links, l.Path)
		paths = append(paths, l.Path)
	}
	if links = dedupe(links); len(links) > 0 {
		w.line("; Links the programs are reached through (/bin -> usr/bin style).")
		for _, l := range links {
			w.line("(allow file-read* (literal %s))", w.path(l))
		}
	}
	var ancestors []string
	for _, path := range paths {
		for d := filepath.Dir(path); ; d = filepath.Dir(d) {
			ancestors = append(ancestors, d)
			if d == "/" {
				break
			}
		}
	}
	w.line("; Stat, not listing, of every directory above them, so that path")
	w.line("; traversal, realpath and getcwd work.")
	for _, d := range dedupe(ancestors) {
		w.line("(allow file-read-metadata (literal %s))", w.path(d))
	}
}

func layers(w *writer, p *policy.Policy) {
	w.line("")
	w.line("; Writes, parents before children. Each path carries the access it ends up")
	w.line("; with after precedence; the last matching rule wins, so a read-only entry")
	w.line("; inside a writable one (or the reverse) overrides its parent below it.")
	for _, l := range p.Layers() {
		switch l.Access {
		case policy.Write:
			w.line("(allow file-write* (subpath %s))", w.path(l.Path))
		case policy.Read:
			w.line("(deny file-write* (subpath %s))", w.path(l.Path))
		default:
			w.line("(deny file-read* file-write* (subpath %s))", w.path(l.Path))
		}
	}
}

func deviceRules(w *writer) {
	w.line("")
	w.line("; Devices every program opens, readable and writable under every profile.")
	w.line("; After the layers, so that a read-only /dev (strict) keeps them.")
	w.line("(allow file-read* file-write*")
	for _, d := range devices {
		w.line("  (literal %s)", quote(d))
	}
	w.line(`  (subpath "/dev/fd") ; /dev/stdin, /dev/stdout and process substitution`)
	w.line(`  (regex #"%s")) ; ptys handed out by /dev/ptmx`, ptySlaves)
}

func protection(w *writer, p *policy.Policy) {
	if len(p.Protected) > 0 {
		w.line("")
		w.line("; Hook protection: readable, never writable, whatever grants them.")
		for _, q := range p.Protected {
			why := p.ProtectedWhy[q]
			if why == "" {
				why = "hook protection"
			}
			w.line("(deny file-write* (subpath %s) %s)", w.path(q), withMessage("protected: "+why))
		}
	}
	// Seatbelt checks a rename as file-write-unlink of the old path (and
	// file-write-create of the new one), so denying the unlink pins a path.
	var pins []string
	for _, d := range p.Pinned {
		if d != "/" {
			pins = append(pins, d)
		}
	}
	for _, l := range p.Layers() {
		if l.Access == policy.Write && l.Path != "/" {
			pins = append(pins, l.Path)
		}
	}
	if len(pins) > 0 {
		w.line("")
		w.line("; Pinned: the parents of protected paths (renaming one would move a")
		w.line("; protected path away) and the writable roots (on Linux each is a mount")
		w.line("; point; moving the workspace would carry it out of its own rules).")
		w.line("; Protected paths themselves are covered by the file-write* above.")
		for _, d := range dedupe(pins) {
			w.line("(deny file-write-unlink (literal %s))", w.path(d))
		}
	}
}

func denyRules(w *writer, p *policy.Policy) error {
	if len(p.Deny) == 0 {
		return nil
	}
	w.line("")
	w.line("; Deny rules, last: no read, no write, no exec, whatever grants them. Each")
	w.line("; covers the match and everything below it. Renaming the directories above")
	w.line("; a match (up to where the pattern starts) is refused too, so a denied")
	w.line("; file cannot be moved out of the rule and read elsewhere.")
	for _, d := range p.Deny {
		if d.Source != "" {
			w.line("; deny %q from %q", d.Entry, d.Source)
		} else {
			w.line("; deny %q", d.Entry)
		}
		var above string
		msg := withMessage(fmt.Sprintf("deny %q", d.Entry))
		if d.Source != "" {
			msg = withMessage(fmt.Sprintf("deny %q from %s", d.Entry, d.Source))
		}
		if d.Rest == "" {
			w.line("(deny file-read* file-write* process-exec (subpath %s) %s)", w.path(d.Prefix), msg)
			above = filepath.Dir(d.Prefix)
		} else {
			re, err := regexFor(d)
			if err != nil {
				return err
			}
			w.line("(deny file-read* file-write* process-exec (regex %s) %s)", re, msg)
			above = d.Prefix
		}
		var filters []string
		for a := above; a != "/"; a = filepath.Dir(a) {
			filters = append(filters, "(literal "+w.path(a)+")")
		}
		if len(filters) > 0 {
			w.line("(deny file-write-unlink %s)", strings.Join(filters, " "))
		}
		if d.Rest != "" {
			pins, err := globPins(d)
			if err != nil {
				return err
			}
			for _, re := range pins {
				w.line("(deny file-write-unlink (regex %s))", re)
			}
		}
	}
	return nil
}

// globPins returns regexes for the directories inside a glob whose rename
// could carry a match out of it: those matching a leading part of the
// pattern that ends in a segment other than "**". (Moving a directory
// matched by "**" keeps everything below it matched by "**".) In
// "certs/*/key.pem" that is every directory certs/*; in "**/.env", none.
func globPins(d policy.DenyRule) ([]string, error) {
	segs := strings.Split(d.Rest, "/")
	var out []string
	for k := 1; k < len(segs); k++ {
		if segs[k-1] == "**" {
			continue
		}
		re, err := rawRegex(policy.DenyRule{Entry: d.Entry, Prefix: d.Prefix, Rest: strings.Join(segs[:k], "/")})
		if err != nil {
			return nil, err
		}
		out = append(out, re)
	}
	return out, nil
}

// regexFor returns the Seatbelt regex literal for a deny glob: the
// pattern's own regex, extended to everything below a match, as a matching
// directory hides its contents.
func regexFor(d policy.DenyRule) (string, error) {
	re, err := rawRegex(d)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(re, `$"`) + `(/[^/]+)*$"`, nil
}

// rawRegex is the Seatbelt regex literal matching exactly what the glob
// matches.
func rawRegex(d policy.DenyRule) (lit string, err error) {
	defer func() {
		// Regex panics on a pattern that does not compile. The resolver
		// validated it already; fail closed rather than crash if not.
		if r := recover(); r != nil {
			err = fmt.Errorf("deny %q: %v", d.Entry, r)
		}
	}()
	re := globexpand.Pattern{Entry: d.Entry, Glob: true, Prefix: d.Prefix, Rest: d.Rest}.Regex()
	// #"..." is read raw, backslashes included, up to the next '"'; there
	// is no way to write a '"' inside it.
	if strings.ContainsRune(re, '"') {
		return "", fmt.Errorf("deny %q: a path with a double quote cannot be written as a Seatbelt regex; deny a parent directory instead", d.Entry)
	}
	return `#"` + re + `"`, nil
}

// checkPaths refuses paths a rule could not match as written: every path
// must be absolute and clean, as the resolver makes them.
func checkPaths(p *policy.Policy) error {
	var all []string
	for _, g := range p.Grants {
		all = append(all, g.Path)
	}
	for _, l := range p.Links {
		all = append(all, l.Path)
	}
	for _, d := range p.Deny {
		all = append(all, d.Prefix)
	}
	all = append(all, p.Protected...)
	all = append(all, p.Pinned...)
	for _, path := range all {
		if !filepath.IsAbs(path) || filepath.Clean(path) != path {
			return fmt.Errorf("path %q is not absolute and clean; cannot write a Seatbelt rule for it", path)
		}
	}
	return nil
}

type root struct{ name, path string }

// writer builds the text and records the parameters it uses.
type writer struct {
	b      strings.Builder
	roots  []root
	params map[string]string
}

func (w *writer) line(format string, args ...any) {
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// path writes a path for a filter: the workspace, GROK_HOME and home
// directories as their parameter (first match in that order), anything
// else as a string.
func (w *writer) path(p string) string {
	for _, r := range w.roots {
		if p == r.path {
			w.params[r.name] = r.path
			return `(param "` + r.name + `")`
		}
	}
	return quote(p)
}

// quote writes an SBPL string: double quotes, with '"' and '\' escaped by a
// backslash; every other byte is written as it is.
// MessagePrefix starts every message Seatbelt reports to the system log
// for one of grok-sandbox's deny rules (and the log predicate of `grok-sandbox help macos`).
const MessagePrefix = "grok-sandbox: "

// withMessage is the modifier that makes Seatbelt's report of a denial by
// this rule name it (the form sandbox-runtime uses for its own denials).
func withMessage(what string) string {
	return "(with message " + quote(MessagePrefix+what) + ")"
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// dedupe sorts paths parents first and drops repeats.
func dedupe(paths []string) []string {
	paths = append([]string(nil), paths...)
	policy.SortPaths(paths)
	out := paths[:0]
	for i, p := range paths {
		if i == 0 || p != paths[i-1] {
			out = append(out, p)
		}
	}
	return out
}
