// Package resolve turns a profile into a policy: the second step of the
// data flow, after launcher/config and before the renderers. It decides
// where the run happens (LocateDirs: HOME, GROK_HOME, the workspace and the
// current directory, all canonical, and which of them are refused), which
// profile runs (Select), and everything the policy.Policy holds (Resolve):
// the built-in profiles' grants (builtin.go), the read_only and read_write
// entries, the deny rules and their masks, hook protection and the git
// repositories' persistence points (gitprotect.go), and the network rule.
// The spelling of paths for the target's kernel is target.go's.
//
// Resolution reads the real file system where a security check needs it
// (links in writable directories, the files it protects or masks, git's
// config), and creates GROK_HOME's protected files, through descriptors
// (create_linux.go), unless the request is a dry run. It refuses with a
// RefusalError (exit 125) or a config.Error.
package resolve

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"

	"grok-sandbox/globexpand"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
)

// Request is what one invocation asks for.
type Request struct {
	Profile        string // --profile/--sandbox or GROK_SANDBOX
	ProfileFrom    string // "--profile" or "GROK_SANDBOX"; "" when nobody chose
	Workspace      string // --workspace, or "" for the current directory
	Target         string // "linux" or "darwin"
	IsolateNetwork bool
	Environ        []string
	// DryRun: a read-only verb; nothing is created on the host.
	DryRun bool
	// Agent is --agent: an agent's name, AgentNone, or "" to recognise it.
	Agent string
	// Executable is the command's executable with every link resolved, as
	// the launcher found it ("" when there is no command: explain).
	Executable string
	// Launcher is grok-sandbox's own executable, every link resolved ("":
	// unknown, or not on this host's target). Where the profile hides it
	// (~/go/bin or ~/.local/bin under strict), it is granted read-only, so
	// that `grok-sandbox status` works from inside.
	Launcher string
}

// RefusalError is a policy that cannot be enforced or a request that cannot
// be served: the run is refused with exit status 125.
type RefusalError struct{ Msg string }

func (e *RefusalError) Error() string { return e.Msg }

// Refuse is a RefusalError (exit 125) with a formatted message.
func Refuse(format string, args ...any) error {
	return &RefusalError{Msg: fmt.Sprintf(format, args...)}
}

// Selection records which profile was chosen and by whom.
type Selection struct {
	Name string
	By   string // "--profile", "GROK_SANDBOX", "config.toml [sandbox] profile", or "default"
}

// Dirs is the part of the process environment the resolver depends on.
type Dirs struct {
	Home     string // canonical
	GrokHome string // canonical
	// grokHomeAsGiven is GROK_HOME before resolving symlinks, to refuse a
	// symlinked GROK_HOME under hook protection.
	grokHomeAsGiven string
	Workspace       string // canonical
	Cwd             string // canonical
	// DryRun: a read-only verb (print, explain, check, profiles, doctor).
	// Nothing is created; what run would create is noted in wouldCreate.
	DryRun      bool
	wouldCreate *[]string
}

// dryRunList is where ensureReal notes what it did not create: nil when
// this is no dry run.
func (e Dirs) dryRunList() *[]string {
	if !e.DryRun {
		return nil
	}
	return e.wouldCreate
}

// WouldCreate lists what a dry run did not create and run would.
func (e Dirs) WouldCreate() []string {
	if e.wouldCreate == nil {
		return nil
	}
	return *e.wouldCreate
}

// LocateDirs finds HOME, the workspace and GROK_HOME (creating it, mode 0700,
// when missing) on host h. A GROK_HOME that would hand a sandbox more than itself is
// refused: every enforcing profile makes GROK_HOME writable and hook
// protection creates files in it.
func LocateDirs(req Request, h Host) (Dirs, error) {
	var e Dirs
	home := envpolicy.Getenv(req.Environ, "HOME")
	if home == "" {
		return e, Refuse("HOME is not set; set it to your home directory")
	}
	var err error
	if e.Home, err = canonical(home); err != nil {
		return e, Refuse("home directory %s: %v", home, err)
	}
	if e.Cwd, err = h.Cwd, h.CwdErr; err != nil {
		return e, Refuse("cannot find the current directory: %v", err)
	}
	if e.Cwd, err = canonical(e.Cwd); err != nil {
		return e, Refuse("current directory: %v", err)
	}
	ws := req.Workspace
	if ws == "" {
		// The current directory is the directory itself (the kernel's),
		// whatever its path holds now.
		ws = e.Cwd
		if e.Workspace, err = canonical(ws); err != nil {
			return e, Refuse("workspace %s: %v", ws, err)
		}
	} else {
		// --workspace names a path: a link on it in a directory you can
		// write could be a sandbox's, pointing the next launch's writable
		// workspace anywhere.
		abs, err := filepath.Abs(ws)
		if err != nil {
			return e, Refuse("workspace %s: %v", ws, err)
		}
		var link string
		e.Workspace, link, err = canonicalNoWritableLinks(abs, func(dir string) bool {
			return unix.Access(dir, unix.W_OK) == nil
		}, 0)
		switch {
		case link != "":
			return e, Refuse("--workspace %s goes through the link %s, in a directory you can write (a sandbox could have put it there); pass the directory it points to", printable.String(ws), printable.String(link))
		case err != nil:
			return e, Refuse("workspace %s: %v", ws, err)
		}
	}
	if fi, err := os.Stat(e.Workspace); err != nil || !fi.IsDir() {
		return e, Refuse("workspace %s is not a directory", ws)
	}
	gh := envpolicy.Getenv(req.Environ, "GROK_HOME")
	if gh == "" {
		gh = filepath.Join(home, ".grok")
	}
	if !filepath.IsAbs(gh) {
		return e, Refuse("GROK_HOME=%s is not an absolute path", gh)
	}
	gh = filepath.Clean(gh)
	// Checked before anything is created in it, and again once canonical.
	if err := checkGrokHome(gh, e); err != nil {
		return e, err
	}
	e.DryRun, e.wouldCreate = req.DryRun, new([]string)
	e.grokHomeAsGiven = gh
	if _, err := os.Lstat(gh); errors.Is(err, fs.ErrNotExist) {
		if e.DryRun {
			// Canonical as run would make it: its existing ancestor
			// resolved, the missing rest appended.
			*e.wouldCreate = append(*e.wouldCreate, gh+"/")
			if e.GrokHome, err = canonicalMissing(gh); err != nil {
				return e, Refuse("GROK_HOME %s: %v", gh, err)
			}
			return e, checkGrokHome(e.GrokHome, e)
		}
		if err := os.MkdirAll(gh, 0o700); err != nil {
			return e, Refuse("cannot create GROK_HOME %s: %v", gh, err)
		}
	}
	if e.GrokHome, err = canonical(gh); err != nil {
		return e, Refuse("GROK_HOME %s: %v", gh, err)
	}
	if err := checkGrokHome(e.GrokHome, e); err != nil {
		return e, err
	}
	return e, nil
}

// virtualFS are the kernel's file systems. The sandbox gets its own /dev and
// /proc and a read-only /sys; a bind of the host's (as a workspace, a grant
// or GROK_HOME) would undo that.
var virtualFS = []string{"/proc", "/sys", "/dev"}

func inVirtualFS(path string) bool {
	for _, v := range virtualFS {
		if policy.Within(path, v) {
			return true
		}
	}
	return false
}

func checkGrokHome(gh string, e Dirs) error {
	const fix = "set GROK_HOME to a directory of its own, such as ~/.grok"
	switch {
	case gh == "/":
		return Refuse("GROK_HOME=/ would make the whole file system writable to every sandbox; %s", fix)
	case inVirtualFS(gh):
		return Refuse("GROK_HOME=%s is inside /proc, /sys or /dev, the kernel's own file systems; %s", gh, fix)
	case policy.Within(e.Home, gh):
		return Refuse("GROK_HOME=%s contains the home directory %s, and every sandbox may write GROK_HOME; %s", gh, e.Home, fix)
	case policy.Within(e.Workspace, gh):
		return Refuse("GROK_HOME=%s contains the workspace %s, whose files would then pass for grok-sandbox's own; %s, or work in another directory", gh, e.Workspace, fix)
	}
	return nil
}

// checkWorkspace refuses a workspace that a sandbox must not be given: one
// inside a kernel file system under any profile, and the root, the home
// directory or a directory above it under a profile that writes the
// workspace (all of home, ~/.bashrc included, would be writable).
func checkWorkspace(ws, home, profile, base string) error {
	const fix = "cd into a project directory or pass --workspace DIR"
	if inVirtualFS(ws) {
		return Refuse("workspace %s is inside /proc, /sys or /dev, the kernel's own file systems, which no sandbox takes from the host; %s", ws, fix)
	}
	if base != config.Workspace && base != config.Strict {
		return nil
	}
	switch {
	case ws == "/":
		return Refuse("workspace / is the whole file system, and profile %s makes the workspace writable; %s", profile, fix)
	case ws == home:
		return Refuse("workspace %s is your home directory, and profile %s makes the workspace writable (all of home, ~/.bashrc too); %s", ws, profile, fix)
	case policy.Within(home, ws):
		return Refuse("workspace %s contains your home directory %s, and profile %s makes the workspace writable (all of home, ~/.bashrc too); %s", ws, home, profile, fix)
	}
	return nil
}

// canonicalMissing is canonical for a path whose last components do not
// exist yet: the longest existing ancestor resolved, the rest appended.
func canonicalMissing(path string) (string, error) {
	rest := ""
	for cur := path; ; cur = filepath.Dir(cur) {
		if _, err := os.Lstat(cur); err == nil {
			c, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return "", err
			}
			return filepath.Join(c, rest), nil
		}
		if cur == "/" {
			return "", fmt.Errorf("%s: no existing ancestor", path)
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// canonical makes path absolute and resolves every symlink in it.
func canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// Select picks the profile of a new run: the flag or GROK_SANDBOX, else
// [sandbox] profile in config.toml, else the requirements' default_profile,
// else off; whatever the choice, the requirements must allow it. A flag or GROK_SANDBOX that is
// set but empty is refused: it reads as a choice, and falling through to
// off (or to config.toml) would run something nobody chose.
func Select(req Request, cfg *config.Config) (Selection, error) {
	switch {
	case req.ProfileFrom != "" && req.Profile == "":
		how := "--profile NAME"
		if req.ProfileFrom == "GROK_SANDBOX" {
			how = "GROK_SANDBOX=NAME, or unset GROK_SANDBOX"
		}
		return Selection{}, Refuse("%s is empty; name a profile (%s; `grok-sandbox profiles` lists them)", req.ProfileFrom, how)
	}
	sel := Selection{Name: config.Off, By: "default"}
	r := cfg.Requirements
	switch {
	case req.ProfileFrom != "":
		sel = Selection{Name: req.Profile, By: req.ProfileFrom}
	case cfg.Default != "":
		sel = Selection{Name: cfg.Default, By: fmt.Sprintf("%s:%d [sandbox] profile", cfg.GeneralFile, cfg.DefaultLine)}
	case r != nil && r.DefaultProfile != "":
		sel = Selection{Name: r.DefaultProfile, By: r.Where("default_profile") + " default_profile"}
	}
	if r != nil {
		if msg := r.Admit(sel.Name, sel.By); msg != "" {
			return Selection{}, Refuse("%s", msg)
		}
	}
	return sel, nil
}

// Resolve turns the selected profile into a policy for req.Target, on host
// h, in the directories LocateDirs found there.
func Resolve(req Request, h Host, env Dirs, cfg *config.Config, sel Selection) (*policy.Policy, error) {
	t := targetFor(req.Target, h.OS, req.Environ)
	p := &policy.Policy{
		Profile:   sel.Name,
		Target:    req.Target,
		Workspace: t.path(env.Workspace),
		Home:      t.path(env.Home),
		GrokHome:  t.path(env.GrokHome),
	}
	for _, s := range cfg.Shadowed {
		p.Warnings = append(p.Warnings, (&config.Error{File: s.File, Line: s.Line, Key: toml.Key{"profiles", s.Name}.String(),
			Msg: fmt.Sprintf("is ignored: %q is a built-in profile name; rename the custom profile", s.Name)}).Error())
	}
	for _, c := range cfg.Conflicts {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"profile %q is defined differently in %s:%d and %s:%d; the global definition is used (run `grok-sandbox doctor`)",
			c.Name, c.Global.File, c.Global.Line, c.Project.File, c.Project.Line))
	}
	for _, o := range cfg.Overridden {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"profile %q is defined differently in %s:%d and by the administrator in %s:%d; the administrator's definition is used (run `grok-sandbox doctor`)",
			o.Name, o.User.File, o.User.Line, o.Admin.File, o.Admin.Line))
	}
	if u := cfg.Untrusted; u != nil {
		p.Warnings = append(p.Warnings, u.Message())
	}
	if r := cfg.Requirements; r != nil {
		p.Requirements = r.File
	}

	var custom *config.CustomProfile
	if b := config.CanonicalBuiltin(sel.Name); b != "" {
		p.Base, p.Source = b, "built-in"
	} else if c, ok := cfg.Profiles[sel.Name]; ok {
		custom = &c
		p.Source = c.File
		ext := c.Extends
		if ext == "" {
			ext = config.Workspace
		}
		switch b := config.CanonicalBuiltin(ext); {
		case b == config.Off:
			return nil, &config.Error{File: c.File, Line: c.KeyLine("extends"), Key: "profiles." + c.Name + ".extends",
				Msg: fmt.Sprintf("cannot extend %q: it is no sandbox; extend workspace, devbox, read-only or strict", ext)}
		case b == "":
			what := "not a built-in profile"
			if _, isCustom := cfg.Profiles[ext]; isCustom {
				what = "a custom profile, and custom profiles can only extend a built-in one"
			}
			return nil, &config.Error{File: c.File, Line: c.KeyLine("extends"), Key: "profiles." + c.Name + ".extends",
				Msg: fmt.Sprintf("%q is %s; use workspace, devbox, read-only or strict", ext, what)}
		default:
			p.Base = b
		}
	} else {
		if b := config.CanonicalBuiltin(config.FoldName(sel.Name)); b != "" {
			return nil, Refuse("unknown profile %q (chosen by %s); profile names are exact: did you mean %q?", sel.Name, sel.By, config.FoldName(sel.Name))
		}
		if near := config.Suggest(sel.Name, slices.Sorted(maps.Keys(cfg.Profiles))); near != "" {
			return nil, Refuse("unknown profile %q (chosen by %s); did you mean %q? (`grok-sandbox profiles` lists them)", sel.Name, sel.By, near)
		}
		if u := cfg.Untrusted; u != nil {
			return nil, Refuse("unknown profile %q (chosen by %s); %s", sel.Name, sel.By, u.Message())
		}
		return nil, Refuse("unknown profile %q (chosen by %s); run `grok-sandbox profiles` to list the profiles", sel.Name, sel.By)
	}
	if p.Base == config.Off {
		return p, nil
	}
	p.Enforce = true
	if err := checkWorkspace(env.Workspace, env.Home, sel.Name, p.Base); err != nil {
		return nil, err
	}

	if err := baseGrants(p, t, h); err != nil {
		return nil, err
	}
	p.Network.RestrictChildren = restrictsNetwork(p.Base)
	p.Network.Isolate = req.IsolateNetwork
	p.NestedUserNS = p.Base == config.Devbox
	if custom != nil {
		if custom.RestrictNetwork != nil {
			p.Network.RestrictChildren = *custom.RestrictNetwork
		}
		if custom.IsolateNetwork != nil && *custom.IsolateNetwork {
			p.Network.Isolate = true
		}
		if len(custom.AllowHosts) > 0 {
			if !p.Network.RestrictChildren {
				return nil, &config.Error{File: custom.File, Line: custom.KeyLine("allow_hosts"), Key: "profiles." + custom.Name + ".allow_hosts",
					Msg: "needs restrict_network = true (without it the children already reach every host); set it, or extend read-only or strict"}
			}
			for _, h := range custom.AllowHosts {
				r, _ := policy.ParseHostRule(h)
				p.Network.AllowHosts = append(p.Network.AllowHosts, r)
			}
			if p.Network.Isolate {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s:%d: profiles.%s.allow_hosts: is not used: the network is isolated, nobody reaches any host", custom.File, custom.KeyLine("allow_hosts"), custom.Name))
				p.Network.AllowHosts = nil
			}
		}
		if err := addEntries(p, t, custom, "read_only", custom.ReadOnly, policy.Read); err != nil {
			return nil, err
		}
		if err := addEntries(p, t, custom, "read_write", custom.ReadWrite, policy.Write); err != nil {
			return nil, err
		}
	}
	if r := cfg.Requirements; r != nil && r.RestrictNetwork {
		if !p.Network.RestrictChildren {
			p.Network.ForcedBy = r.Where("restrict_network")
		}
		p.Network.RestrictChildren = true
	}
	if err := addAgent(p, t, req, env, custom); err != nil {
		return nil, err
	}
	if req.Launcher != "" && p.Enforce && !p.Exposed(req.Launcher) {
		if path, link, err := canonicalGrant(p, req.Launcher); err == nil && link == "" {
			p.Grants = append(p.Grants, policy.Grant{Path: t.path(path), Access: policy.Read,
				Why: "grok-sandbox itself (status from inside)", Source: "built-in"})
		}
	}
	if r := cfg.Requirements; r != nil && t.host && p.Enforce && !p.Exposed(r.File) {
		// What binds the run is readable inside, so that `grok-sandbox
		// status` can say so; it is root's and read-only.
		p.Grants = append(p.Grants, policy.Grant{Path: t.path(r.File), Access: policy.Read,
			Why: "the administrator's requirements (status from inside)", Source: "built-in"})
	}
	if t.host && hookProtected(p.Base) {
		enclosingRepository(p, env)
	}
	if hookProtected(p.Base) {
		if err := protectHooks(p, t, env); err != nil {
			return nil, err
		}
	}
	if cfg.Requirements != nil && t.host && os.Geteuid() == 0 {
		systemReadOnly(p, t)
	}
	protectRequirements(p, t, cfg.Requirements)
	policy.SortGrants(p.Grants)
	var deny []denyEntry
	if custom != nil {
		for i, e := range custom.Deny {
			line := custom.EntryLine("deny", i)
			deny = append(deny, denyEntry{entry: e, file: custom.File, line: line, key: "profiles." + custom.Name + ".deny"})
		}
	}
	if r := cfg.Requirements; r != nil {
		for i, e := range r.Deny {
			deny = append(deny, denyEntry{entry: e, file: r.File, line: r.DenyLine(i), key: "requirements.deny"})
		}
	}
	if len(deny) > 0 {
		if err := resolveDeny(p, t, deny); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// protectRequirements makes the administrator's requirements file, and
// the directory that holds it, read-only wherever the profile could
// write them (devbox writes /etc for root): no sandbox may change what
// every later launch must obey. Where the profile cannot write them they
// are read-only already.
func protectRequirements(p *policy.Policy, t target, r *config.Requirements) {
	file := config.RequirementsFile()
	var paths []string
	for _, q := range []string{filepath.Dir(file), file} {
		if _, err := os.Lstat(q); err == nil && p.AccessAt(t.path(q)) == policy.Write {
			paths = append(paths, q)
		}
	}
	if len(paths) == 0 {
		return
	}
	why := "administrator's requirements: what every launch must obey"
	if r == nil {
		why = "administrator's requirements directory: a file there would bind every later launch"
	}
	if p.ProtectedWhy == nil {
		p.ProtectedWhy = map[string]string{}
	}
	for _, q := range paths {
		if !slices.Contains(p.Protected, t.path(q)) {
			p.Protected = append(p.Protected, t.path(q))
			p.ProtectedWhy[t.path(q)] = why
		}
		for dir := filepath.Dir(q); dir != "/"; dir = filepath.Dir(dir) {
			if !slices.Contains(p.Pinned, t.path(dir)) {
				p.Pinned = append(p.Pinned, t.path(dir))
			}
		}
	}
	policy.SortPaths(p.Protected)
	policy.SortPaths(p.Pinned)
}

// systemDirs are where the programs and settings every launch relies on
// live: bwrap, grok-sandbox, the dynamic loader and its libraries, /etc.
var systemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/opt"}

// systemReadOnly makes every writable grant in a system directory
// read-only: under the administrator's requirements a sandbox running as
// root (devbox, or a read_write entry over /usr or /etc) could otherwise
// replace bwrap or grok-sandbox, preload a library into them, or open
// /etc to everyone, and so undo the requirements for every later launch
// of every user.
func systemReadOnly(p *policy.Policy, t target) {
	const why = "read-only: the administrator's requirements bind every later launch, and root could undo them here"
	for i, g := range p.Grants {
		if g.Access != policy.Write {
			continue
		}
		for _, d := range systemDirs {
			if policy.Within(g.Path, t.path(d)) {
				p.Grants[i].Access = policy.Read
				p.Grants[i].Why = g.Why + ", " + why
				break
			}
		}
	}
	// A writable grant above one (read_write = ["/"]).
	for _, d := range systemDirs {
		d = t.path(d)
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && p.AccessAt(d) == policy.Write {
			p.Grants = append(p.Grants, policy.Grant{Path: d, Access: policy.Read, Why: "system directory, " + why, Source: "built-in"})
		}
	}
}

// denyEntry is one deny entry and where it is written.
type denyEntry struct {
	entry string
	file  string
	line  int
	key   string
}

// addEntries turns read_only/read_write entries into grants. Entries are
// explicit paths: a trailing /** or /* names the directory; anything still
// glob-like, white space at either end, or a path that does not exist is
// skipped with a warning rather than guessed at.
func addEntries(p *policy.Policy, t target, c *config.CustomProfile, key string, entries []string, acc policy.Access) error {
	for i, entry := range entries {
		path, warn := normaliseGrant(entry, p.Workspace, p.Home)
		asked := path
		if warn == "" {
			var err error
			var link string
			switch {
			case inVirtualFS(path):
				warn = "is inside /proc, /sys or /dev, the kernel's own file systems, which no grant can expose; skipped"
			case t.host:
				// Canonical by one walk that refuses links a sandbox can
				// write: a second resolution could meet a link swapped in
				// meanwhile.
				path, link, err = canonicalGrant(p, path)
			default:
				path, err = t.canonical(path)
			}
			if link != "" {
				return &config.Error{File: c.File, Line: c.EntryLine(key, i), Key: toml.Key{"profiles", c.Name, key}.String(),
					Msg: fmt.Sprintf("entry %q goes through the link %s, in a directory a sandbox can write: a sandboxed command could point it anywhere (home, say) for the next launch; name the directory the link points to instead", entry, link)}
			}
			if warn != "" {
			} else if err != nil {
				warn = "does not exist; skipped"
				if acc == policy.Read && t.host && movableAway(p, asked) {
					// A sandbox could have moved it away (renaming a
					// directory above it) to have it writable elsewhere:
					// run nothing that it was to protect.
					return &config.Error{File: c.File, Line: c.EntryLine(key, i), Key: toml.Key{"profiles", c.Name, key}.String(),
						Msg: fmt.Sprintf("entry %q does not exist, in a directory a sandbox can write. If it was never made (a cache on a fresh machine), create it: mkdir -p %s. If it existed, a sandboxed command may have moved it (and what it protects) away: restore it. Or remove the entry", entry, shellQuote(asked))}
				}
			} else if inVirtualFS(path) {
				warn = "is inside /proc, /sys or /dev, the kernel's own file systems, which no grant can expose; skipped"
			}
		}
		if warn != "" {
			p.Warnings = append(p.Warnings, (&config.Error{File: c.File, Line: c.EntryLine(key, i),
				Key: toml.Key{"profiles", c.Name, key}.String(), Msg: fmt.Sprintf("entry %q %s", entry, warn)}).Error())
			continue
		}
		p.Grants = append(p.Grants, policy.Grant{Path: path, Access: acc, Why: key + " entry", Source: c.File})
		if acc == policy.Read {
			// Pin the directories above it, as for a mask: renaming one
			// would carry the read-only path out of the entry, writable
			// at the next launch.
			for dir := filepath.Dir(path); dir != "/"; dir = filepath.Dir(dir) {
				if !slices.Contains(p.Pinned, dir) {
					p.Pinned = append(p.Pinned, dir)
				}
			}
		}
	}
	policy.SortPaths(p.Pinned)
	return nil
}

// movableAway reports whether the deepest existing directory above the
// missing path is one a sandbox could change: for root, one that sandboxes
// write (the workspace, GROK_HOME, the temporary directories, this
// profile's writable grants), since every directory is root's to write.
func movableAway(p *policy.Policy, path string) bool {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			if os.Geteuid() == 0 {
				return p.SandboxWritable(dir)
			}
			return SandboxCouldWrite(p, dir)
		}
		if dir == "/" {
			return false
		}
	}
}

// canonicalGrant resolves path component by component. A symbolic link
// that sits in a directory some sandbox can write (this profile's writable
// paths, the workspace, GROK_HOME, the temporary directories, and any
// directory you can write, since it could be another launch's workspace or
// grant) is returned as link and not followed: it is a sandbox's to change,
// and following it would let a command choose what a later launch grants.
// Other links are followed, by the same rule.
func canonicalGrant(p *policy.Policy, path string) (canonical, link string, err error) {
	// Any directory you can write could be some launch's workspace or
	// grant, so a link there is never followed, whatever this profile
	// writes: only links in directories you cannot write (root's /opt,
	// say, for an ordinary user) are.
	return canonicalNoWritableLinks(path, func(dir string) bool { return SandboxCouldWrite(p, dir) }, 0)
}

// SandboxCouldWrite reports whether some sandbox of yours could change what
// dir holds: this profile writes it, it is a workspace, GROK_HOME or
// temporary directory, you can write it, or you own it (a directory of yours
// left 0555, or with a deny ACL, is yours to chmod back from any sandbox
// that has it on a writable mount). It decides where a link is never
// followed and which mount points bwrap must not create.
func SandboxCouldWrite(p *policy.Policy, dir string) bool {
	if p.SandboxWritable(dir) || unix.Access(dir, unix.W_OK) == nil {
		return true
	}
	var st unix.Stat_t
	return unix.Lstat(dir, &st) == nil && int(st.Uid) == os.Geteuid()
}

// canonicalNoWritableLinks resolves path component by component, following
// a symbolic link only where writable says its directory is not writable;
// such a link is returned as link instead.
func canonicalNoWritableLinks(path string, writable func(dir string) bool, depth int) (canonical, link string, err error) {
	if depth > 40 {
		return "", "", fmt.Errorf("%s: too many levels of symbolic links", path)
	}
	cur := "/"
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" {
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// cur is canonical: the directory holding the link as the
			// kernel sees it.
			if writable(cur) {
				return "", next, nil
			}
			// Follow it by the same rule: its target may pass through a
			// link a sandbox can write.
			target, err := os.Readlink(next)
			if err != nil {
				return "", "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			if next, link, err = canonicalNoWritableLinks(target, writable, depth+1); err != nil || link != "" {
				return "", link, err
			}
		}
		cur = next
	}
	return cur, "", nil
}

// normaliseGrant applies the read_only/read_write entry rules; it returns the
// absolute (not yet canonical) path, or a warning saying why the entry is
// skipped.
func normaliseGrant(entry, workspace, home string) (string, string) {
	if entry == "" {
		return "", "is empty; skipped"
	}
	if strings.TrimSpace(entry) != entry {
		return "", "has leading or trailing white space; skipped (white space is part of a path: fix the entry)"
	}
	e := entry
	switch {
	case e == "/**" || e == "/*":
		e = "/"
	case strings.HasSuffix(e, "/**"):
		e = strings.TrimSuffix(e, "/**")
	case strings.HasSuffix(e, "/*"):
		e = strings.TrimSuffix(e, "/*")
	}
	if strings.ContainsAny(e, "*?[") {
		return "", "is a pattern, not a path; skipped (list the concrete directories, or move the pattern to deny)"
	}
	switch {
	case e == "~":
		e = home
	case strings.HasPrefix(e, "~/"):
		e = filepath.Join(home, e[2:])
	case !filepath.IsAbs(e):
		e = filepath.Join(workspace, e)
	}
	return filepath.Clean(e), ""
}

// protectHooks sets up hook protection: everything a sandboxed command could
// change to weaken a later launch or to plant code that runs later outside
// any sandbox becomes read-only, and the existing parents of each protected
// path are pinned. That is GROK_HOME/hooks/, GROK_HOME/hooks-paths and every
// absolute target listed there (grok-sandbox help integrity: "Global hook protection"); the control files that decide what
// the next launch enforces; and the persistence points of the git
// repositories the sandbox can write (protectGit).
func protectHooks(p *policy.Policy, t target, env Dirs) error {
	if fi, err := os.Lstat(env.grokHomeAsGiven); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return Refuse("GROK_HOME %s is a symlink; hook protection needs the real directory: set GROK_HOME to %s",
			env.grokHomeAsGiven, env.GrokHome)
	}
	if env.grokHomeAsGiven != env.GrokHome {
		return Refuse("GROK_HOME %s has a symlink in its path (it resolves to %s); set GROK_HOME to the real directory",
			env.grokHomeAsGiven, env.GrokHome)
	}
	pr := protector{p: p, t: t, why: map[string]string{}}
	hooks := filepath.Join(env.GrokHome, "hooks")
	registry := filepath.Join(env.GrokHome, "hooks-paths")
	if err := ensureReal(hooks, true, env.dryRunList()); err != nil {
		return err
	}
	if err := ensureReal(registry, false, env.dryRunList()); err != nil {
		return err
	}
	targets, ignored, err := hookTargets(registry)
	if err != nil {
		return err
	}
	for _, line := range ignored {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: relative line %s is ignored (only absolute targets are protected)", registry, line))
	}
	pr.add(hooks, "global hooks")
	pr.add(registry, "hook registry")
	for _, q := range targets {
		pr.add(q, "listed in hooks-paths")
	}
	if err := pr.controlFiles(env); err != nil {
		return err
	}
	if err := pr.agentProtected(env); err != nil {
		return err
	}
	if t.host {
		// Repositories are found on the host's file system; a foreign
		// target's paths cannot be looked at from here.
		if err := pr.protectGit(env); err != nil {
			return err
		}
	}
	pr.finish()
	return nil
}

// protector collects the protected paths of one policy and why each is
// protected.
type protector struct {
	p     *policy.Policy
	t     target
	paths []string
	why   map[string]string
}

func (pr *protector) add(path, why string) {
	if _, dup := pr.why[path]; dup {
		return
	}
	pr.paths = append(pr.paths, path)
	pr.why[path] = why
}

// finish records the protected paths and pins every existing parent, so
// that no protected path can be moved away and replaced.
func (pr *protector) finish() {
	p, t := pr.p, pr.t
	pinned := map[string]bool{}
	for _, q := range pr.paths {
		for dir := filepath.Dir(q); dir != "/"; dir = filepath.Dir(dir) {
			pinned[dir] = true
		}
	}
	p.ProtectedWhy = map[string]string{}
	for _, q := range pr.paths {
		p.Protected = append(p.Protected, t.path(q))
		p.ProtectedWhy[t.path(q)] = pr.why[q]
	}
	for dir := range pinned {
		if !slices.Contains(p.Pinned, t.path(dir)) {
			p.Pinned = append(p.Pinned, t.path(dir))
		}
	}
	policy.SortPaths(p.Protected)
	policy.SortPaths(p.Pinned)
}

// controlFiles protects the files that decide what a later launch enforces
// and records: the profile definitions, the general config (the default
// profile and the environment policy) and the event log with its rotation
// file. GROK_HOME's are created empty (0600) when missing, so that a sandbox
// cannot create them, and anything else than a regular file there refuses
// the run (a FIFO or a link planted at the log cannot be held read-only);
// the project file is protected when it exists, and its .grok directory is
// pinned with it.
func (pr *protector) controlFiles(env Dirs) error {
	for _, f := range []struct{ name, why string }{
		{"sandbox.toml", "global profiles: a later launch's policy"},
		{"config.toml", "general config: a later launch's default profile and environment"},
		{eventlog.Name, "event log: written only by grok-sandbox, through a descriptor"},
		{eventlog.Name + ".1", "rotated event log"},
		{config.TrustFile, "trusted project files: which project profiles a later launch reads"},
	} {
		path := filepath.Join(env.GrokHome, f.name)
		if err := ensureReal(path, false, env.dryRunList()); err != nil {
			return err
		}
		pr.add(path, f.why)
	}
	// The project file is protected when it is a regular file in a real
	// .grok directory. Anything else there is never read (see
	// config.ReadProjectFile), so it decides nothing and blocks nothing.
	project := filepath.Join(env.Workspace, ".grok", "sandbox.toml")
	if fi, err := os.Lstat(filepath.Dir(project)); err != nil || !fi.IsDir() {
		return nil
	}
	if fi, err := os.Lstat(project); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	pr.add(project, "project profiles: a later launch's policy")
	return nil
}

// ensureReal creates path as an empty directory (0700) or file (0600) when
// it is missing, and refuses anything else than that type (a symlink above
// all, which could point the protection elsewhere). In a dry run (dryRun
// not nil) a missing path is only noted there.
func ensureReal(path string, dir bool, dryRun *[]string) error {
	mode := fs.FileMode(0o600)
	if dir {
		mode = 0o700
	}
	return ensureRealMode(path, dir, mode, dryRun)
}

// ensureRealMode is ensureReal with the mode a missing path is created with.
func ensureRealMode(path string, dir bool, mode fs.FileMode, dryRun *[]string) error {
	want := "file"
	if dir {
		want = "directory"
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && dryRun != nil:
		name := path
		if dir {
			name += "/"
		}
		*dryRun = append(*dryRun, name)
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if err := createEmpty(path, dir, mode); err != nil {
			return Refuse("cannot create %s for hook protection: %v", path, err)
		}
		return nil
	case err != nil:
		return Refuse("hook protection: %v", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return Refuse("%s is a symlink; hook protection needs a real %s there: remove the link", path, want)
	case fi.IsDir() != dir || (!dir && !fi.Mode().IsRegular()):
		return Refuse("%s is not a %s; hook protection needs a real %s there: move it away", path, want, want)
	}
	return nil
}

// createByPath creates path as a directory or a file holding content;
// Mkdir and O_EXCL never follow a link at path itself. What is there
// afterwards is checked to be what was made.
func createByPath(path string, dir bool, mode fs.FileMode, content []byte) error {
	var err error
	if dir {
		err = os.Mkdir(path, mode)
	} else {
		var f *os.File
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
		if err == nil {
			_, err = f.Write(content)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err != nil || fi.IsDir() != dir || (!dir && !fi.Mode().IsRegular()) {
		return fmt.Errorf("%s was replaced while it was being created", path)
	}
	return nil
}

// hookTargets reads the hooks-paths registry: one absolute path a line.
// Blank lines and lines starting with # are ignored, and so are relative
// lines; a target with a symlink in any component, one that does not exist,
// or a line with white space around the path refuses the run.
func hookTargets(registry string) (targets, ignored []string, err error) {
	data, err := os.ReadFile(registry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil // a dry run, which did not create it: empty
	}
	if err != nil {
		return nil, nil, Refuse("hook protection: %v", err)
	}
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if trimmed != line && strings.HasPrefix(trimmed, "/") {
			return nil, nil, Refuse("%s:%d: %q has white space around the path; remove it", registry, i+1, line)
		}
		if !strings.HasPrefix(line, "/") {
			ignored = append(ignored, fmt.Sprintf("%d (%q)", i+1, line))
			continue
		}
		if filepath.Clean(line) != line {
			return nil, nil, Refuse("%s:%d: %q is not a clean absolute path; write it as %s", registry, i+1, line, filepath.Clean(line))
		}
		if err := noSymlinkComponents(line); err != nil {
			return nil, nil, Refuse("%s:%d: hook target %s", registry, i+1, err)
		}
		out = append(out, line)
	}
	return out, ignored, nil
}

func noSymlinkComponents(path string) error {
	for cur := path; cur != "/"; cur = filepath.Dir(cur) {
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("does not exist (%s is missing); create it or remove the line", cur)
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("has a symlink in its path (%s); list the real path instead", cur)
		}
	}
	return nil
}

// resolveDeny validates every deny entry (refusing the run on any
// unsupported form), keeps the rules for renderers that match at run time,
// and expands them to the existing paths that a mount-based backend masks.
func resolveDeny(p *policy.Policy, t target, entries []denyEntry) error {
	var pats []globexpand.Pattern
	sources := map[string]string{}
	for _, d := range entries {
		entry := d.entry
		if _, dup := sources[entry]; !dup {
			sources[entry] = d.file
			if d.line > 0 && d.file != "" {
				sources[entry] = fmt.Sprintf("%s:%d", d.file, d.line)
			}
		}
		pat, err := globexpand.Parse(entry, p.Workspace, p.Home)
		if err != nil {
			return &config.Error{File: d.file, Line: d.line, Key: d.key, Msg: err.Error()}
		}
		pats = append(pats, pat)
		p.Deny = append(p.Deny, policy.DenyRule{Entry: entry, Prefix: t.path(pat.Prefix), Rest: pat.Rest, Source: d.file})
	}
	if !t.host {
		// Paths of another platform cannot be walked from here; that
		// target's renderer matches the rules at run time.
		return nil
	}
	matches, missing, err := globexpand.Expand(pats, globexpand.DefaultLimits)
	if err != nil {
		return Refuse("%v", err)
	}
	for _, m := range missing {
		p.Skipped = append(p.Skipped, policy.Skipped{Path: m.Path(), Entry: m.Entry, Reason: "does not exist"})
	}
	seen := map[string]bool{}
	for _, m := range matches {
		var path string
		dir := m.Dir
		if m.Target != "" {
			fi, err := os.Stat(m.Target)
			if err != nil {
				p.Skipped = append(p.Skipped, policy.Skipped{Path: m.Path, Entry: m.Entry, Reason: "dangling symlink"})
				continue
			}
			path, dir = m.Target, fi.IsDir()
		} else if fi, err := os.Lstat(m.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			p.Skipped = append(p.Skipped, policy.Skipped{Path: m.Path, Entry: m.Entry, Reason: "dangling symlink"})
			continue
		} else if parent, err := filepath.EvalSymlinks(filepath.Dir(m.Path)); err == nil {
			// An exact entry may name the file through a symlinked
			// directory: mask and pin the real path, or renaming the real
			// parent would carry the secret away.
			path = filepath.Join(parent, filepath.Base(m.Path))
		} else {
			return Refuse("deny %q: cannot resolve %s: %v", m.Entry, filepath.Dir(m.Path), err)
		}
		if !p.Exposed(path) {
			p.Skipped = append(p.Skipped, policy.Skipped{Path: path, Entry: m.Entry, Reason: "not exposed by the profile"})
			continue
		}
		if seen[path] {
			continue
		}
		seen[path] = true
		dev, ino, ok := FileID(path)
		if !ok {
			p.Skipped = append(p.Skipped, policy.Skipped{Path: path, Entry: m.Entry, Reason: "does not exist"})
			continue
		}
		p.Masks = append(p.Masks, policy.Mask{Path: path, Dir: dir, Entry: m.Entry, Source: sources[m.Entry], Dev: dev, Ino: ino})
	}
	// Parents first; a path inside a masked directory is hidden already,
	// and mounting on it would fail, since the mask has nothing inside.
	paths := make([]string, len(p.Masks))
	byPath := map[string]policy.Mask{}
	for i, m := range p.Masks {
		paths[i], byPath[m.Path] = m.Path, m
	}
	policy.SortPaths(paths)
	for i, path := range paths {
		p.Masks[i] = byPath[path]
	}
	kept := p.Masks[:0]
	for _, m := range p.Masks {
		covered := false
		for _, k := range kept {
			if k.Dir && policy.Within(m.Path, k.Path) {
				covered = true
				break
			}
		}
		if !covered {
			kept = append(kept, m)
		}
	}
	p.Masks = kept
	// Pin the parents of every masked path, so that no directory above a
	// secret can be renamed to carry it out of the deny set for a later
	// launch (where an exact path would no longer match).
	pinned := map[string]bool{}
	for _, d := range p.Pinned {
		pinned[d] = true
	}
	for _, m := range p.Masks {
		for dir := filepath.Dir(m.Path); dir != "/"; dir = filepath.Dir(dir) {
			if !pinned[dir] {
				pinned[dir] = true
				p.Pinned = append(p.Pinned, dir)
			}
		}
	}
	policy.SortPaths(p.Pinned)
	return nil
}

// shellQuote is path as one word for a POSIX shell.
func shellQuote(path string) string {
	if path != "" && strings.Trim(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=,:@%") == "" {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}

// enclosingRepository says what git can do in a workspace that is a
// subdirectory of a git work tree (a package of a monorepo), and how to
// change it: the repository's .git is not made writable by default (see
// the warning), and strict hides the work tree. Never a recipe for a
// repository at or above your home
// (a dotfiles repository: a sandbox could rewrite what a later checkout
// writes into your home), nor through a link: then git there stays as it
// was, with a warning.
func enclosingRepository(p *policy.Policy, env Dirs) {
	if p.AccessAt(p.Workspace) != policy.Write {
		return
	}
	for dir := filepath.Dir(p.Workspace); ; dir = filepath.Dir(dir) {
		dotgit := filepath.Join(dir, ".git")
		fi, err := os.Lstat(dotgit)
		if err == nil {
			switch {
			case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir():
				p.Warnings = append(p.Warnings, fmt.Sprintf("the workspace lies in the git work tree %s, whose .git is not a directory: git there works only as the profile allows", dir))
			case env.Home != "" && policy.Within(env.Home, dir):
				p.Warnings = append(p.Warnings, fmt.Sprintf("the workspace lies in the git work tree %s, at or above your home: its .git is not made writable (a sandbox could rewrite what a later checkout writes into your home); git commits there work only outside the sandbox", dir))
			case p.AccessAt(dir) == policy.Hidden:
				// strict: exposing the work tree would show the command
				// every other package of it (their .env files too).
				p.Warnings = append(p.Warnings, fmt.Sprintf("the workspace lies in the git work tree %s, which this profile hides: git finds no repository here. To let git work, at the price of showing the whole work tree read-only and its .git writable, extend the profile with read_only = [%q] and read_write = [%q]", dir, dir, dotgit))
			case p.AccessAt(dotgit) != policy.Write:
				// Not made writable by default: a sandbox that writes a
				// .git can leave links in it (logs/HEAD, COMMIT_EDITMSG)
				// that a later git outside follows, writing into files of
				// yours; for the workspace's own repository that is already
				// so, and it is not extended to one you did not choose.
				p.Warnings = append(p.Warnings, fmt.Sprintf("the workspace lies in the git work tree %s, whose .git this profile keeps read-only: git can read but not commit here. To commit from the sandbox, make %s the workspace, or extend the profile with read_write = [%q] (a sandbox that writes a .git can plant links that a later git outside follows)", dir, dir, dotgit))
			}
			return
		}
		if dir == "/" {
			return
		}
	}
}
