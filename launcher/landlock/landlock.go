// Package landlock renders a resolved policy as a Landlock ruleset: the Linux
// fallback when bubblewrap is missing or unusable. grok-sandbox restricts the
// thread that will exec the command (Apply) and execs it; the command and
// everything it starts inherit the restriction and can never shed it.
//
// # Contract
//
// One ruleset handles every filesystem right the running kernel's ABI knows
// (except RESOLVE_UNIX, see below), at the highest ABI the kernel has. There
// is no best-effort mode: Plan refuses what Landlock cannot express, and
// Apply fails, never continues unrestricted. Plan refuses:
//   - a policy with deny entries (deny needs bubblewrap: Landlock can only
//     add access, never take it away below a grant);
//   - hook protection below ABI 3 (truncate(2) is not restricted before it,
//     so a protected file could be emptied);
//   - a read-only or protected path inside a writable grant that cannot be
//     split (see below) because a path on the way does not exist, is not a
//     directory or cannot be listed;
//   - any layer path with a symlink in it (the policy holds canonical paths).
//
// Rights: read = EXECUTE|READ_FILE|READ_DIR; write = every handled right.
// Handled per ABI: 1 the thirteen original rights, 2 +REFER, 3 +TRUNCATE,
// 5 +IOCTL_DEV. ABI 4's network rights are not handled (seccomp does the
// network) and neither is RESOLVE_UNIX (it would cut the command off from
// host services reached over Unix sockets, such as name resolution). From
// ABI 6 the ruleset is scoped: SIGNAL always (this backend has no pid
// namespace, so the command must not signal processes outside it), and
// ABSTRACT_UNIX_SOCKET when the network is isolated. A file rule only
// carries file rights (READ_FILE, WRITE_FILE, TRUNCATE, EXECUTE, IOCTL_DEV).
//
// Under every profile the host's /dev is shared: READ_FILE, WRITE_FILE,
// TRUNCATE (a shell's "> /dev/null" opens with O_TRUNC) and IOCTL_DEV on
// /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, /dev/tty,
// /dev/ptmx and beneath /dev/pts (plus READ_DIR on /dev/pts); /proc gets the
// read rights only: sysctls and sysrq-trigger check the uid, not
// capabilities, so a root command without capabilities could otherwise
// rewrite the host's kernel.core_pattern (writes to /proc/self fail too).
// Nothing else in /dev is writable (/dev/shm included). ReadAll adds the read rights on "/".
//
// # Splitting
//
// Landlock rules are additive and hierarchical: a right granted on a
// directory holds for everything beneath it and a deeper rule can only add
// rights. "A read-only path inside a writable grant" (a read_only entry, or
// a hook-protected path such as GROK_HOME/hooks inside GROK_HOME) is
// therefore expressed by splitting: every directory that the policy makes
// writable and that lies strictly above a read-only path (from the topmost
// writable grant down, the read-only path excluded) is a split directory. It
// gets only the read rights itself; each existing entry of it that is not
// itself a split directory gets the full rights (a file the file rights, a
// directory everything); the read-only path gets the read rights, and
// writable grants deeper inside it get their own rules (splitting again when
// they hold read-only paths in turn). Consequences, also returned as Notes:
//   - nothing can be created directly in a split directory (e.g. directly in
//     GROK_HOME, because GROK_HOME/hooks is protected), and its entries
//     cannot be removed or renamed (rename and unlink need REMOVE_* on the
//     parent). That is also what pins the parents of protected paths;
//   - an entry that appears in a split directory after Plan (created by
//     another program) is read-only inside the sandbox;
//   - a symlink entry of a split directory gets no rule (a rule would land on
//     whatever it points to, possibly outside the grant): the link itself
//     cannot be replaced, and what it points to keeps its own access.
//
// # Other limits
//
// Landlock does not govern metadata: chmod, chown, utimes and extended
// attributes still work (as far as ordinary permissions allow) on files the
// sandbox cannot write, hook-protected ones included. Hard links that exist
// before the launch reach the same file under another path's rules. Mounts
// are impossible for a Landlock-restricted process, so views cannot be
// rearranged.
package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"grok-sandbox/launcher/policy"
)

// Filesystem access rights (include/uapi/linux/landlock.h), kept here so the
// package builds where x/sys/unix lacks them; landlock_linux.go checks them
// against unix's.
const (
	accessExecute     uint64 = 1 << 0
	accessWriteFile   uint64 = 1 << 1
	accessReadFile    uint64 = 1 << 2
	accessReadDir     uint64 = 1 << 3
	accessRemoveDir   uint64 = 1 << 4
	accessRemoveFile  uint64 = 1 << 5
	accessMakeChar    uint64 = 1 << 6
	accessMakeDir     uint64 = 1 << 7
	accessMakeReg     uint64 = 1 << 8
	accessMakeSock    uint64 = 1 << 9
	accessMakeFifo    uint64 = 1 << 10
	accessMakeBlock   uint64 = 1 << 11
	accessMakeSym     uint64 = 1 << 12
	accessRefer       uint64 = 1 << 13 // ABI 2
	accessTruncate    uint64 = 1 << 14 // ABI 3
	accessIoctlDev    uint64 = 1 << 15 // ABI 5
	accessResolveUnix uint64 = 1 << 16 // never handled

	scopeAbstractUnixSocket uint64 = 1 << 0 // ABI 6
	scopeSignal             uint64 = 1 << 1 // ABI 6

	// readRights is what a read-only path gets.
	readRights = accessExecute | accessReadFile | accessReadDir
	// fileRights are the only rights a rule on a non-directory may carry.
	fileRights = accessExecute | accessWriteFile | accessReadFile | accessTruncate | accessIoctlDev
	// deviceRights are the rights on the shared devices.
	deviceRights = accessReadFile | accessWriteFile | accessTruncate | accessIoctlDev
	// procRights are the rights on /proc: read only. Sysctl and
	// sysrq-trigger writes are checked against the uid alone, so a root
	// command without capabilities could otherwise rewrite the host's
	// kernel.core_pattern.
	procRights = readRights
)

var accessNames = []string{
	"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
	"make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block",
	"make_sym", "refer", "truncate", "ioctl_dev", "resolve_unix",
}

// AccessString spells a set of filesystem rights as Landlock's names joined
// by "|", lowest bit first ("none" for no right).
func AccessString(a uint64) string {
	if a == 0 {
		return "none"
	}
	var parts []string
	for i, n := range accessNames {
		if a&(1<<i) != 0 {
			parts = append(parts, n)
			a &^= 1 << i
		}
	}
	if a != 0 {
		parts = append(parts, fmt.Sprintf("%#x", a))
	}
	return strings.Join(parts, "|")
}

// handledFS is every filesystem right this package handles at abi.
func handledFS(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	h := uint64(1<<13 - 1) // ABI 1: execute .. make_sym
	if abi >= 2 {
		h |= accessRefer
	}
	if abi >= 3 {
		h |= accessTruncate
	}
	if abi >= 5 {
		h |= accessIoctlDev
	}
	return h
}

// scopes is the scoped set at abi.
func scopes(abi int, isolate bool) uint64 {
	if abi < 6 {
		return 0
	}
	s := scopeSignal
	if isolate {
		s |= scopeAbstractUnixSocket
	}
	return s
}

// devices are the device files every sandbox may use, and devPts the
// directory of pseudo-terminals.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

const devPts = "/dev/pts"

// Rule grants Access on Path and everything beneath it. Dir is whether Path
// is a directory; a rule on anything else carries only file rights.
type Rule struct {
	Path   string
	Access uint64
	Dir    bool
}

// Ruleset is a planned Landlock restriction.
type Ruleset struct {
	ABI     int    // the ABI it was planned for
	Handled uint64 // handled_access_fs
	Scoped  uint64 // scoped (0 below ABI 6)
	Rules   []Rule // sorted by path
	// Notes say what the ruleset cannot do that bubblewrap would, for
	// explain and the run's warning.
	Notes []string
}

// RulesetFor turns a policy into a ruleset for the given Landlock ABI. It reads
// the file system only to split directories (listing them) and to check the
// paths it puts in rules (Lstat, symlink resolution). It returns an error,
// one line that names the path and says what to do, for anything Landlock
// cannot express exactly.
func RulesetFor(p *policy.Policy, abi int) (*Ruleset, error) {
	switch {
	case p == nil || !p.Enforce:
		return nil, errors.New("landlock: the policy enforces nothing (profile off): there is nothing to restrict")
	case p.Target != "" && p.Target != "linux":
		return nil, fmt.Errorf("landlock: the policy targets %s; Landlock is Linux only", p.Target)
	case abi < 1:
		return nil, errors.New("landlock: not available on this kernel (it needs Linux >= 5.13 with Landlock enabled in the lsm= list); install bubblewrap")
	case len(p.Deny) > 0:
		return nil, fmt.Errorf("landlock: profile %s has deny entries (%q from %s), which Landlock cannot express: deny needs bubblewrap; install bubblewrap",
			p.Profile, p.Deny[0].Entry, p.Deny[0].Source)
	case len(p.Masks) > 0:
		return nil, fmt.Errorf("landlock: profile %s masks %s, which Landlock cannot express: deny needs bubblewrap; install bubblewrap",
			p.Profile, p.Masks[0].Path)
	case abi < 3 && len(p.Protected) > 0:
		return nil, fmt.Errorf("landlock: hook protection of %s needs Landlock ABI 3 (Linux >= 6.2), which restricts truncate(2); this kernel has ABI %d: install bubblewrap or upgrade the kernel",
			p.Protected[0], abi)
	}
	pl := &planner{p: p, handled: handledFS(abi), rules: map[string]*Rule{}}
	rs := &Ruleset{ABI: abi, Handled: pl.handled, Scoped: scopes(abi, p.Network.Isolate)}

	layers := p.Layers()
	for _, l := range layers {
		if err := canonicalPath(l.Path, l.Access); err != nil {
			return nil, err
		}
	}

	// Split directories: every writable directory strictly above a
	// read-only layer (grant or protected path).
	split := map[string][]string{}
	for _, l := range layers {
		if l.Access != policy.Read || l.Path == "/" {
			continue
		}
		for a := filepath.Dir(l.Path); ; a = filepath.Dir(a) {
			if p.AccessAt(a) == policy.Write {
				split[a] = append(split[a], l.Path)
			}
			if a == "/" {
				break
			}
		}
	}
	splitDirs := make([]string, 0, len(split))
	for d := range split {
		splitDirs = append(splitDirs, d)
	}
	policy.SortPaths(splitDirs)

	if p.ReadAll {
		if err := pl.add("/", readRights); err != nil {
			return nil, err
		}
	}
	for _, d := range splitDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			return nil, fmt.Errorf("landlock: cannot split %s to keep %s read-only: %v; install bubblewrap", d, split[d][0], cause(err))
		case !fi.IsDir():
			return nil, fmt.Errorf("landlock: cannot split %s to keep %s read-only: it is not a directory; install bubblewrap", d, split[d][0])
		}
		if err := pl.add(d, readRights); err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("landlock: cannot split %s to keep %s read-only: cannot list it: %v; install bubblewrap", d, split[d][0], cause(err))
		}
		for _, e := range entries {
			c := filepath.Join(d, e.Name())
			if _, ok := split[c]; ok || p.AccessAt(c) != policy.Write {
				continue // its own split, or a read-only layer below
			}
			if e.Type()&os.ModeSymlink != 0 {
				pl.notes = append(pl.notes, fmt.Sprintf(
					"%s is a symlink in the split directory %s: it gets no rule; it cannot be replaced and what it points to keeps its own access", c, d))
				continue
			}
			if err := pl.add(c, pl.handled); err != nil {
				return nil, err
			}
		}
		pl.notes = append(pl.notes, fmt.Sprintf(
			"%s is split to keep %s read-only: nothing can be created directly in it, its entries cannot be removed or renamed, and entries that appear in it after launch are read-only; its existing entries stay writable",
			d, strings.Join(split[d], ", ")))
	}
	for _, l := range layers {
		var err error
		switch {
		case l.Access == policy.Read:
			err = pl.add(l.Path, readRights)
		case l.Access == policy.Write && split[l.Path] == nil:
			err = pl.add(l.Path, pl.handled)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := pl.addSystem("/proc", procRights); err != nil {
		return nil, err
	}
	for _, d := range devices {
		if err := pl.addSystem(d, deviceRights); err != nil {
			return nil, err
		}
	}
	if err := pl.addSystem(devPts, deviceRights|accessReadDir); err != nil {
		return nil, err
	}

	for _, r := range pl.rules {
		rs.Rules = append(rs.Rules, *r)
	}
	sort.Slice(rs.Rules, func(i, j int) bool { return rs.Rules[i].Path < rs.Rules[j].Path })
	if err := rs.check(p, layers); err != nil {
		return nil, err
	}
	rs.Notes = append(pl.notes, abiNotes(p, abi)...)
	return rs, nil
}

// planner collects rules, one per path.
type planner struct {
	p       *policy.Policy
	handled uint64
	rules   map[string]*Rule
	notes   []string
}

// add grants access on an existing path that is not a symlink, merging with
// a rule already there.
func (pl *planner) add(path string, access uint64) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("landlock: cannot grant %s: %v; install bubblewrap", path, cause(err))
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("landlock: cannot grant %s: it is a symlink (a rule would apply to its target); install bubblewrap", path)
	}
	access &= pl.handled
	if !fi.IsDir() {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	if r, ok := pl.rules[path]; ok {
		r.Access |= access
		return nil
	}
	pl.rules[path] = &Rule{Path: path, Access: access, Dir: fi.IsDir()}
	return nil
}

// addSystem grants access on a host path that may be missing or a symlink
// (/dev/ptmx often points to pts/ptmx): the rule goes on what it resolves to.
func (pl *planner) addSystem(path string, access uint64) error {
	c, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	return pl.add(c, access)
}

// canonicalPath refuses a layer path with a symlink in it: a rule on it
// would apply to wherever the link points.
func canonicalPath(path string, acc policy.Access) error {
	c, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("landlock: cannot make %s %s: %v; install bubblewrap", path, acc, cause(err))
	}
	if c != path {
		return fmt.Errorf("landlock: cannot make %s %s: it has a symlink in its path (it resolves to %s); install bubblewrap", path, acc, c)
	}
	return nil
}

// effective is the rights the ruleset gives path: the union of the rules on
// it and its ancestors.
func (r *Ruleset) effective(path string) uint64 {
	var a uint64
	for {
		i := sort.Search(len(r.Rules), func(i int) bool { return r.Rules[i].Path >= path })
		if i < len(r.Rules) && r.Rules[i].Path == path {
			a |= r.Rules[i].Access
		}
		if path == "/" {
			return a
		}
		path = filepath.Dir(path)
	}
}

// check verifies what the policy requires of the rules, so that a planning
// mistake refuses the run rather than weakening it: no read-only layer can
// be written, and no protected or pinned path can be removed, renamed or
// replaced (its parent has no write right at all).
func (r *Ruleset) check(p *policy.Policy, layers []policy.Layer) error {
	writeish := r.Handled &^ readRights
	for _, l := range layers {
		if l.Access == policy.Read {
			if a := r.effective(l.Path) & writeish; a != 0 {
				return fmt.Errorf("landlock: %s would get %s although it is read-only; install bubblewrap", l.Path, AccessString(a))
			}
		}
	}
	for _, q := range p.Protected {
		if q == "/" {
			continue
		}
		if a := r.effective(filepath.Dir(q)) & writeish; a != 0 {
			return fmt.Errorf("landlock: protected %s could be removed, renamed or replaced: its directory would get %s; install bubblewrap", q, AccessString(a))
		}
	}
	for _, d := range p.Pinned {
		if d == "/" {
			continue
		}
		if a := r.effective(filepath.Dir(d)) & (accessRemoveDir | accessRefer); a&accessRemoveDir != 0 {
			return fmt.Errorf("landlock: pinned %s could be renamed: its parent would get %s; install bubblewrap", d, AccessString(a))
		}
	}
	return nil
}

// abiNotes are the limits of the running ABI.
func abiNotes(p *policy.Policy, abi int) []string {
	var n []string
	if len(p.Protected) > 0 {
		n = append(n, "hook-protected paths cannot be written, truncated, removed or renamed, but their mode, owner, times and extended attributes can still be changed (Landlock does not govern metadata)")
	}
	if abi < 2 {
		n = append(n, "Landlock ABI 1: moving or linking a file into another directory always fails (EXDEV)")
	}
	if abi < 3 {
		n = append(n, "Landlock ABI < 3: truncate(2) is not restricted")
	}
	if abi < 5 {
		n = append(n, "Landlock ABI < 5: ioctl on devices is not restricted")
	}
	if abi < 6 {
		n = append(n, "Landlock ABI < 6: the command can signal processes outside the sandbox (no signal scoping)")
		if p.Network.Isolate {
			n = append(n, "Landlock ABI < 6: abstract Unix sockets outside the sandbox are not scoped")
		}
	}
	n = append(n, "the host /dev is shared: only null, zero, full, random, urandom, tty, ptmx and pts are writable")
	return n
}

// cause is err without the path an *os.PathError repeats.
func cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
