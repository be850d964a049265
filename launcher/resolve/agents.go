package resolve

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"grok-sandbox/launcher/agents"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/policy"
)

// AgentNone is the --agent value (and the agent key's) for "wrap no agent".
const AgentNone = "none"

// agentFor decides which agent, if any, the run wraps: --agent, else the
// profile's agent key, else the agent whose files the command's executable
// resolves into. The choice is recorded on the policy with how it was made.
func agentFor(req Request, custom *config.CustomProfile) (agents.Match, string, bool, error) {
	named, by := req.Agent, "--agent"
	if named == "" && custom != nil && custom.Agent != "" {
		named, by = custom.Agent, fmt.Sprintf("%s:%d agent", custom.File, custom.KeyLine("agent"))
	}
	switch {
	case named == AgentNone:
		return agents.Match{}, "", false, nil
	case named != "":
		a, ok := agents.ByName(named)
		if !ok {
			return agents.Match{}, "", false, Refuse("unknown agent %q (%s); the agents grok-sandbox knows are %s, or none",
				named, by, strings.Join(agents.Names(), ", "))
		}
		m := agents.Match{Agent: a}
		if req.Executable != "" {
			if r, ok := agents.Recognise(req.Executable); ok && r.Agent.Name == a.Name {
				m = r
			}
		}
		return m, by, true, nil
	case req.Executable != "":
		if m, ok := agents.Recognise(req.Executable); ok {
			return m, "recognised from " + req.Executable, true, nil
		}
	}
	return agents.Match{}, "", false, nil
}

// addAgent grants the recognised agent's state writable (and so exposes it
// under strict), creating what is missing, and finds its real program when
// the command is only its launcher. Its configuration files are protected
// with the hooks (agentProtected). A state path is never resolved through a
// link in a directory a sandbox can write, and never the home directory or
// an ancestor of it.
func addAgent(p *policy.Policy, t target, req Request, env Dirs, custom *config.CustomProfile) error {
	m, by, ok, err := agentFor(req, custom)
	if err != nil {
		return err
	}
	if ok {
		a := &policy.Agent{Name: m.Agent.Name, Title: m.Agent.Title, By: by, Env: m.Agent.Env}
		getenv := func(k string) string { return envpolicy.Getenv(req.Environ, k) }
		var hostState []string
		for _, s := range m.Agent.StatePaths(env.Home, getenv) {
			path, err := agentStatePath(p, env, m.Agent, s)
			if err != nil {
				return err
			}
			hostState = append(hostState, path)
			if err := ensureState(path, s.File, env); err != nil {
				return err
			}
			if !p.Exposed(path) || p.AccessAt(path) != policy.Write {
				p.Grants = append(p.Grants, policy.Grant{Path: t.path(path), Access: policy.Write,
					Why: "agent " + m.Agent.Name + " state", Source: by})
			}
			a.State = append(a.State, t.path(path))
		}
		// The agent's own package (or native install), read-only where
		// the profile hides it (a per-user npm prefix under strict) or
		// would let it be written (Claude Code's ~/.claude/local, inside
		// its own state): nothing it runs may replace the program that
		// gets the network at the next launch.
		if m.Root != "" && (!p.Exposed(m.Root) || p.AccessAt(m.Root) == policy.Write) {
			root, link, err := canonicalGrant(p, m.Root)
			if err == nil && link == "" {
				p.Grants = append(p.Grants, policy.Grant{Path: t.path(root), Access: policy.Read,
					Why: "agent " + m.Agent.Name + " program", Source: by})
			}
		}
		if mi := m.Agent.Mirror; mi != nil && getenv(mi.Env) == "" && mi.File < len(hostState) && mi.Dir < len(hostState) {
			file, dir := hostState[mi.File], hostState[mi.Dir]
			if p.Enforce && p.AccessAt(filepath.Dir(file)) != policy.Write {
				a.Env = maps.Clone(a.Env)
				if a.Env == nil {
					a.Env = map[string]string{}
				}
				a.Env[mi.Env] = t.path(dir)
				a.Mirror, a.MirrorOf = t.path(filepath.Join(dir, filepath.Base(file))), t.path(file)
				// The agent uses the copy: the original is not written
				// from inside (it stays as the profile shows it).
				kept := p.Grants[:0]
				for _, g := range p.Grants {
					if !(g.Path == t.path(file) && g.Why == "agent "+m.Agent.Name+" state") {
						kept = append(kept, g)
					}
				}
				p.Grants = kept
				a.State = slices.DeleteFunc(a.State, func(s string) bool { return s == t.path(file) })
			}
			if env.dryRunList() == nil {
				// Every launch, whatever the profile: a change made on
				// either side reaches the other at the next one.
				if err := syncMirror(file, filepath.Join(dir, filepath.Base(file))); err != nil {
					p.Warnings = append(p.Warnings, fmt.Sprintf("%s: cannot keep %s and its copy %s in step: %v", m.Agent.Title, file, filepath.Join(dir, filepath.Base(file)), err))
				}
			}
		}
		// A package whose install put the native program itself in place
		// of its launcher (Claude Code's and opencode's bin/*.exe) runs
		// as the command: no other process is the agent, and a tool that
		// ran the platform package's copy must not get the network.
		if globs := m.ProgramGlobs(); len(globs) > 0 && !nativeExecutable(req.Executable) {
			if prog := findProgram(globs); prog != "" && underSandboxWrites(p, prog) {
				// Fail closed: no process gets the command's network.
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s's program %s lies where a sandbox writes (%s), so it does not keep the network under restrict_network (a tool could replace it); install %s outside it", m.Agent.Title, prog, underWhat(p, prog), m.Agent.Title))
			} else if prog != "" {
				a.Program, a.ProgramBy = prog, "the "+m.Agent.Title+" package"
			}
		}
		p.Agent = a
	}
	if custom != nil && custom.AgentExecutable != "" {
		key := fmt.Sprintf("%s:%d agent_executable", custom.File, custom.KeyLine("agent_executable"))
		prog, err := agentExecutable(custom.AgentExecutable, env.Home)
		if err == nil && underSandboxWrites(p, prog) {
			err = fmt.Errorf("%s lies where a sandbox writes (%s): a tool could rewrite or replace it, and its code would get the network at the next launch; install the agent outside the workspace, GROK_HOME, the temporary directories and the profile's read_write entries", prog, underWhat(p, prog))
		}
		if err != nil {
			return &config.Error{File: custom.File, Line: custom.KeyLine("agent_executable"),
				Key: "profiles." + custom.Name + ".agent_executable", Msg: err.Error()}
		}
		if p.Agent == nil {
			p.Agent = &policy.Agent{By: key}
		}
		p.Agent.Program, p.Agent.ProgramBy = prog, key
	}
	if p.Agent != nil && p.Agent.Program != "" {
		dev, ino, ok := FileID(p.Agent.Program)
		if !ok {
			return Refuse("the agent's program %s is gone", p.Agent.Program)
		}
		p.Agent.ProgramDev, p.Agent.ProgramIno = dev, ino
	}
	return nil
}

// underSandboxWrites reports whether a sandbox could rewrite prog or
// replace it by renaming a directory above it: prog or one of them is
// writable under this profile, or is a workspace, GROK_HOME or temporary
// directory, which every sandbox writes.
func underSandboxWrites(p *policy.Policy, prog string) bool {
	return underWhat(p, prog) != ""
}

// underWhat is the writable directory above prog (or prog), "" for none.
func underWhat(p *policy.Policy, prog string) string {
	if p.AccessAt(prog) == policy.Write {
		return prog
	}
	for dir := filepath.Dir(prog); ; dir = filepath.Dir(dir) {
		if p.SandboxWritable(dir) {
			return dir
		}
		if dir == "/" {
			return ""
		}
	}
}

// agentStatePath checks one state path: absolute, not the home directory or
// above it, not in a virtual file system, and reached with no link in a
// directory a sandbox can write.
func agentStatePath(p *policy.Policy, env Dirs, a agents.Agent, s agents.State) (string, error) {
	switch {
	case !filepath.IsAbs(s.Path):
		return "", Refuse("%s state %s is not an absolute path", a.Title, s.Path)
	case policy.Within(env.Home, s.Path) || policy.Within(env.Workspace, s.Path):
		return "", Refuse("%s state %s would grant your home or workspace directory (or everything above it) writable; point %s at a directory of its own",
			a.Title, s.Path, orName(s.Env, "it"))
	case inVirtualFS(s.Path):
		return "", Refuse("%s state %s is inside a virtual file system", a.Title, s.Path)
	case !policy.Within(s.Path, env.Home):
		// A variable must not turn a system directory writable (say
		// CODEX_HOME=/etc as root).
		return "", Refuse("%s state %s is outside your home, so it is not granted by itself; grant it with read_write in a custom profile if you mean it, and run with --agent none",
			a.Title, s.Path)
	case policy.Within(s.Path, env.GrokHome) && s.Path != env.GrokHome:
		return "", Refuse("%s state %s is inside GROK_HOME, whose files decide what later launches enforce; keep it elsewhere in your home",
			a.Title, s.Path)
	case policy.Within(s.Path, env.Workspace):
		// Every run writes the workspace, agent or not: its protected
		// files would be anyone's to change.
		return "", Refuse("%s state %s is inside the workspace, which every sandboxed command writes, so its configuration could not be protected; keep it in your home",
			a.Title, s.Path)
	}
	canon, link, err := canonicalGrant(p, s.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", Refuse("%s state %s: %v", a.Title, s.Path, err)
	}
	if link != "" {
		return "", Refuse("%s state %s goes through the link %s, in a directory a sandbox can write: a sandboxed command could point it anywhere for the next launch; replace the link with the directory it names",
			a.Title, s.Path, link)
	}
	if canon == "" {
		canon = s.Path
	}
	return canon, nil
}

func orName(env, alt string) string {
	if env != "" {
		return env
	}
	return alt
}

// ensureState creates a missing state directory (0700, parents too) or
// file (0600, holding "{}": the state files are JSON), through descriptors.
// A dry run only notes it.
func ensureState(path string, file bool, env Dirs) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return Refuse("agent state %s is a symlink; replace it with what it names", path)
	case err == nil && file && !fi.Mode().IsRegular():
		return Refuse("agent state %s is not a regular file", path)
	case err == nil && !file && !fi.IsDir():
		return Refuse("agent state %s is not a directory", path)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return Refuse("agent state %s: %v", path, err)
	}
	if l := env.dryRunList(); l != nil {
		name := path
		if !file {
			name += "/"
		}
		*l = append(*l, name)
		return nil
	}
	var missing []string
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); err == nil || dir == "/" {
			break
		}
		missing = append(missing, dir)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := createEmpty(missing[i], true, 0o700); err != nil {
			return Refuse("cannot create %s for the agent's state: %v", missing[i], err)
		}
	}
	var content []byte
	mode := fs.FileMode(0o700)
	if file {
		content, mode = []byte("{}\n"), 0o600
	}
	if err := createWith(path, !file, mode, content); err != nil {
		return Refuse("cannot create the agent's state %s: %v", path, err)
	}
	return nil
}

// findProgram is the first regular, executable file the globs name.
func findProgram(globs []string) string {
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				if real, err := filepath.EvalSymlinks(m); err == nil {
					return real
				}
			}
		}
	}
	return ""
}

// agentExecutable checks the agent_executable key: an absolute path (or
// ~/...) to an executable regular file, taken with every link resolved.
func agentExecutable(path, home string) (string, error) {
	if path == "~" || strings.HasPrefix(path, "~/") {
		path = filepath.Join(home, strings.TrimPrefix(path, "~"))
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is not an absolute path (or ~/...)", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%v", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", real)
	}
	return real, nil
}

// agentProtected protects the agent's configuration files and directories
// (hooks, permissions, MCP servers, plugins, sandbox and API settings),
// creating missing ones (files with their neutral content, directories
// empty) so that their absence cannot be used either. So does it, in every
// run, for the agents of the table whose configuration lies where this run
// may write (grok-cli's settings are in GROK_HOME's default place): a
// command that is no agent must not change them for the agent's next run.
func (pr *protector) agentProtected(env Dirs) error {
	type item struct {
		f     agents.Protected
		title string
	}
	var items []item
	if a := pr.p.Agent; a != nil && a.Name != "" {
		ag, _ := agents.ByName(a.Name)
		var state []agents.State
		for _, s := range a.State {
			state = append(state, agents.State{Path: s})
		}
		for _, f := range ag.ProtectedPaths(state) {
			items = append(items, item{f, ag.Title})
		}
	}
	for _, ag := range agents.Table {
		if a := pr.p.Agent; a != nil && a.Name == ag.Name {
			continue
		}
		state := ag.StatePaths(env.Home, func(string) string { return "" })
		for _, f := range ag.ProtectedPaths(state) {
			dir := filepath.Dir(f.Path)
			if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || pr.p.AccessAt(dir) != policy.Write {
				continue
			}
			items = append(items, item{f, ag.Title})
		}
	}
	for _, it := range items {
		f := it.f
		what := "file"
		if f.Dir {
			what = "directory"
		}
		fi, err := os.Lstat(f.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && env.dryRunList() != nil:
			l := env.dryRunList()
			name := f.Path
			if f.Dir {
				name += "/"
			}
			*l = append(*l, name)
		case errors.Is(err, fs.ErrNotExist):
			mode := fs.FileMode(0o600)
			if f.Dir {
				mode = 0o700
			}
			if err := createWith(f.Path, f.Dir, mode, []byte(f.Initial)); err != nil {
				return Refuse("cannot create %s to protect it: %v", f.Path, err)
			}
		case err != nil:
			return Refuse("agent protection: %v", err)
		case fi.Mode()&fs.ModeSymlink != 0 || (f.Dir && !fi.IsDir()) || (!f.Dir && !fi.Mode().IsRegular()):
			return Refuse("%s is not a real %s (a symlink or something else); protecting %s's configuration needs the real %s there: replace it", f.Path, what, it.title, what)
		}
		pr.add(f.Path, it.title+" configuration: its hooks, permissions, MCP servers, plugins and sandbox settings for the next run")
	}
	return nil
}

// nativeExecutable reports whether path is a compiled program (ELF or
// Mach-O), not a script that a launcher interpreter runs.
func nativeExecutable(path string) bool {
	if path == "" {
		return false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	if n, _ := io.ReadFull(f, magic[:]); n != 4 {
		return false
	}
	switch string(magic[:]) {
	case "\x7fELF", "\xcf\xfa\xed\xfe", "\xce\xfa\xed\xfe", "\xca\xfe\xba\xbe":
		return true
	}
	return false
}
