// Package launcher runs one invocation from end to end, and is where it
// meets the machine: it probes the host (ProbeHost in host.go, bubblewrap
// in backend.go, Landlock), reads the config (launcher/config), resolves
// the policy (launcher/resolve), chooses the backend (selectBackend),
// renders it (argv, sbpl, launcher/landlock, launcher/seccomp; stage.go
// says which filter and which init-stage checks go where), hands bwrap its
// descriptors (handover_linux.go) and execs with an empty environment (TZ set empty only). It
// decides no grant itself: what a profile allows is resolve's, and the
// launcher only carries it out or refuses.
package launcher

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"grok-sandbox/argv"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/sbpl"
)

// Exit statuses of grok-sandbox itself (grok-sandbox help commands: "Exit status"); a command that runs passes
// its own status through exec.
const (
	ExitRefused       = initcfg.ExitRefused
	ExitNotExecutable = initcfg.ExitNotExecutable
	ExitNotFound      = initcfg.ExitNotFound
)

// ExitError carries the status grok-sandbox exits with and its one line.
type ExitError struct {
	Code int
	Err  error
}

// Error is empty for a plain status (a supervised command's own), which is
// passed on without a message.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// Code is the exit status for err: 125 unless err says otherwise.
func Code(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitRefused
}

// Invocation is one run, print or explain.
type Invocation struct {
	resolve.Request
	Command []string
	Verbose bool
	Stderr  io.Writer
}

// Plan is everything decided before exec: nothing below it reads config.
type Plan struct {
	Selection resolve.Selection
	Config    *config.Config
	Dirs      resolve.Dirs
	Policy    *policy.Policy
	Environ   envpolicy.Result
	Backend   string // "bwrap", "none" (off), "seatbelt"
	// Argv is what the plan execs for the none, Landlock and Seatbelt
	// backends; for bwrap it is Launch.Argv().
	Argv []string
	// Launch is the bwrap invocation, its options and its command kept
	// apart.
	Launch *argv.Launch
	// Seccomp and Init are the contents of the descriptors bwrap gets
	// (initcfg.FDSeccomp, initcfg.FDInit); nil when not used.
	Seccomp []byte
	Init    []byte
	// InitShown is the init config as print shows it (no values).
	InitShown initcfg.Config
	// Seatbelt is the rendered profile on the darwin target.
	Seatbelt *sbpl.Profile
	// Bwrap is what was found of bubblewrap on a Linux host.
	Bwrap Bubblewrap
	// Landlock is the ruleset when bwrap is not usable.
	Landlock *landlock.Ruleset
	// Degraded says what is lost when the preferred backend is not used.
	Degraded string

	// workspaceFlag: --workspace was given, and the command starts in the
	// workspace unless the current directory is inside it already.
	workspaceFlag bool
	// stderr gets the one warning when the event log cannot be written.
	stderr    io.Writer
	logWarned bool
	// verbose: run --verbose, which also says which executable is the
	// init stage.
	verbose bool
}

// Backends.
const (
	BackendNone     = "none"
	BackendBwrap    = "bwrap"
	BackendSeatbelt = "seatbelt"
	BackendLandlock = "landlock"
)

// Prepare resolves inv into a plan without touching the sandbox.
func Prepare(inv Invocation) (*Plan, error) {
	host := ProbeHost()
	env, err := resolve.LocateDirs(inv.Request, host)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(env.GrokHome, env.Workspace)
	if err != nil {
		return nil, err
	}
	sel, err := resolve.Select(inv.Request, cfg)
	if err != nil {
		return nil, err
	}
	req := inv.Request
	if len(inv.Command) > 0 && req.Executable == "" {
		req.Executable = executableOf(inv.Command[0], envpolicy.Apply(inv.Environ, cfg.Env, req.Target, nil).Env)
	}
	if req.Target == "" || req.Target == runtime.GOOS {
		req.Launcher = launcherPath()
	}
	pol, err := resolve.Resolve(req, host, env, cfg, sel)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Selection: sel, Config: cfg, Dirs: env, Policy: pol, workspaceFlag: inv.Workspace != ""}
	if err := plan.selectBackend(); err != nil {
		return nil, err
	}
	forced := map[string]string{
		"GROK_SANDBOX_PROFILE": pol.Profile,
		"GROK_SANDBOX_BACKEND": plan.Backend,
	}
	if a := pol.Agent; a != nil {
		for k, v := range a.Env {
			forced[k] = v
		}
	}
	// git's identity where the profile hides your git config (strict):
	// the name and email of [user] in ~/.gitconfig and
	// $XDG_CONFIG_HOME/git/config, read here, outside, as environment
	// variables git prefers to any file; nothing else of those files.
	if p := pol; p.Enforce && p.AccessAt(filepath.Join(env.Home, ".gitconfig")) == policy.Hidden {
		name, email := gitIdentity(env.Home, envpolicy.Getenv(inv.Environ, "XDG_CONFIG_HOME"))
		for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", name}, {"GIT_COMMITTER_NAME", name}, {"GIT_AUTHOR_EMAIL", email}, {"GIT_COMMITTER_EMAIL", email}} {
			if _, set := os.LookupEnv(kv[0]); kv[1] != "" && !set && envpolicy.Getenv(inv.Environ, kv[0]) == "" {
				forced[kv[0]] = kv[1]
			}
		}
	}
	if plan.Backend == BackendNone {
		forced = nil
	}
	plan.Environ = envpolicy.Apply(inv.Environ, cfg.Env, pol.Target, forced)
	return plan, nil
}

// selectBackend chooses how the policy is enforced (grok-sandbox help backends): bwrap when it
// works; else Landlock where the policy can be expressed exactly; else
// devbox runs unenforced with a warning and everything else is refused.
// Every fallback is a warning, and Degraded says what is lost.
func (plan *Plan) selectBackend() error {
	p := plan.Policy
	switch {
	case !p.Enforce:
		plan.Backend = BackendNone
		return nil
	case p.Target == "darwin":
		plan.Backend = BackendSeatbelt
		return nil
	case p.Target != runtime.GOOS:
		// Rendering for Linux elsewhere: show the primary backend.
		plan.Backend = BackendBwrap
		return nil
	}
	// Only run remembers a successful probe; read-only verbs write nothing.
	plan.Bwrap = hostBackends.bwrap(plan.Dirs.GrokHome, true, !plan.Dirs.DryRun)
	if plan.Bwrap.Usable {
		plan.Backend = BackendBwrap
		return nil
	}
	why := plan.Bwrap.Reason
	if abi := hostBackends.landlockABI(); abi > 0 {
		if p.Requirements != "" && os.Geteuid() == 0 {
			return resolve.Refuse("profile %s: %s binds this run, and only bubblewrap can hold it against root (under Landlock a root sandbox could change the file's mode): %s", p.Profile, p.Requirements, why)
		}
		if len(p.Deny) > 0 {
			return resolve.Refuse("profile %s has deny entries, and only bubblewrap can hide paths: %s", p.Profile, why)
		}
		rs, err := planLandlock(p, abi)
		if err != nil {
			return resolve.Refuse("profile %s cannot be enforced with Landlock (%v), and %s", p.Profile, err, why)
		}
		plan.Backend, plan.Landlock = BackendLandlock, rs
		plan.Degraded = fmt.Sprintf("%s; enforcing profile %s with Landlock (ABI %d) instead: no pid, user or mount namespace, no fresh /dev or /proc, and protected files keep their modes changeable (see `grok-sandbox explain`)", why, p.Profile, abi)
		return nil
	}
	const noLandlock = "Landlock is not available either (it needs Linux 5.13 or later with Landlock enabled)"
	if p.Base == config.Devbox && p.Source == "built-in" && p.Requirements == "" {
		plan.Backend = BackendNone
		plan.Degraded = fmt.Sprintf("%s, and %s: devbox runs UNSANDBOXED", why, noLandlock)
		return nil
	}
	return resolve.Refuse("%s, and %s: profile %s cannot be enforced", why, noLandlock, p.Profile)
}

// Render fills in the argv for the plan's backend. path is the command's
// executable as the launcher resolved it ("" for print, which runs nothing:
// the command's first word is shown as given).
func (plan *Plan) Render(command []string, path string) error {
	p := plan.Policy
	switch plan.Backend {
	case BackendNone, BackendLandlock:
		plan.Argv = append([]string(nil), command...)
		return nil
	case BackendBwrap:
		if _, err := ObserveMode(); err != nil {
			return resolve.Refuse("%v", err)
		}
		chdir := plan.StartDir()
		uid, gid := os.Getuid(), os.Getgid()
		opts := bwrapOptions(p, chdir, uid)
		running := path != ""
		if !running {
			path = command[0]
		}
		l := argv.Render(p, opts)
		cfg := initFor(p, opts, l.Moves, path, command, plan.Environ.Env, uid, gid)
		if running {
			// What this run's caller ignored, not the profile's: print
			// shows none.
			cfg.Ignored = initcfg.IgnoredBy(signal.Ignored)
		}
		init, err := encodeInit(cfg)
		if err != nil {
			return err
		}
		plan.InitShown = cfg.Shown()
		prog, err := buildProgram(bwrapBaseRules(p, opts))
		if err != nil {
			return err
		}
		plan.Init, plan.Seccomp = init, encodeProgram(prog)
		plan.Launch = &l
		plan.Argv = l.Argv()
		return nil
	case BackendSeatbelt:
		return plan.renderSeatbelt(command)
	}
	return resolve.Refuse("the %s backend cannot run on %s", plan.Backend, p.Target)
}

// launcherPath is this executable, every link resolved; "" when unknown.
func launcherPath() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return ""
	}
	return real
}

// executableOf is the file name runs as, every link resolved, found the way
// the sandbox will find it (with the final environment's PATH); "" when
// there is none. It only tells which agent the command is: Run looks the
// command up again and refuses what cannot run.
func executableOf(name string, env []string) string {
	path, err := lookPathIn(name, envpolicy.Getenv(env, "PATH"))
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ""
	}
	return real
}

// lookPathIn finds the command the way the sandbox will (with the final
// environment's PATH), to exit 127 or 126 as a shell would before anything
// starts.
func lookPathIn(name, path string) (string, error) {
	check := func(cand string) error {
		fi, err := os.Stat(cand)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%s: no such file", cand)}
		case err != nil:
			return &ExitError{Code: ExitNotExecutable, Err: err}
		case fi.IsDir():
			return &ExitError{Code: ExitNotExecutable, Err: fmt.Errorf("%s: is a directory", cand)}
		case fi.Mode()&0o111 == 0:
			return &ExitError{Code: ExitNotExecutable, Err: fmt.Errorf("%s: permission denied", cand)}
		}
		return nil
	}
	if strings.Contains(name, "/") {
		return name, check(name)
	}
	var denied error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		cand := filepath.Join(dir, name)
		err := check(cand)
		if err == nil {
			return cand, nil
		}
		if Code(err) == ExitNotExecutable && denied == nil {
			if fi, serr := os.Stat(cand); serr == nil && !fi.IsDir() {
				denied = err
			}
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%s: command not found", name)}
}

// Run prepares the sandbox and replaces this process with it. It returns
// only on failure.
func Run(inv Invocation) error {
	if len(inv.Command) == 0 {
		return resolve.Refuse("no command given; usage: grok-sandbox run [--profile NAME] -- COMMAND [ARG...]")
	}
	plan, err := Prepare(inv)
	if err != nil {
		logRefusal(inv, err)
		return err
	}
	plan.stderr = inv.Stderr
	if plan.Policy.Enforce {
		if outer, ok := insideGrokSandbox(); ok {
			// Not logged: the log is read-only in here, and a warning that
			// says so would only hide the refusal.
			return resolve.Refuse("already inside a grok-sandbox sandbox (%s), which cannot be nested: run the command directly (it already runs under that sandbox), or start grok-sandbox outside it", outer)
		}
	}
	Warn(inv.Stderr, plan)
	if plan.Selection.By == "default" {
		fmt.Fprintln(inv.Stderr, "grok-sandbox: no profile chosen: running unsandboxed (choose one with --profile NAME, GROK_SANDBOX=NAME, or [sandbox] profile in "+printable.String(plan.Config.GeneralFile)+")")
	}
	path, err := lookPathIn(inv.Command[0], envpolicy.Getenv(plan.Environ.Env, "PATH"))
	if err == nil {
		path, err = plan.commandVisible(path)
	}
	if err != nil {
		// `run strict -- ls`: a profile's name taken for the command.
		if _, custom := plan.Config.Profiles[inv.Command[0]]; Code(err) == ExitNotFound && (config.IsBuiltin(inv.Command[0]) || custom) {
			err = &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%v; did you mean --profile %s? (a profile is chosen with --profile, before the command)", err, inv.Command[0])}
		}
		plan.log(refusedEvent(err))
		return err
	}
	// Where it matters: an agent keeps the network and its tools could
	// rewrite it for the next launch. A project's own tool in the
	// workspace (.venv/bin/python, ./app) is written by the project
	// anyway, and the recipes of `grok-sandbox help recipes` run them there.
	if p := plan.Policy; p.Network.RestrictChildren && !p.Network.Isolate && p.Agent != nil && p.AccessAt(path) == policy.Write {
		fmt.Fprintf(inv.Stderr, "grok-sandbox: warning: %s is writable inside the sandbox: the processes it starts could change it (and run code with its network); install it outside the workspace and the other writable paths\n", printable.String(path))
	}
	if err := plan.Render(inv.Command, path); err != nil {
		plan.log(refusedEvent(err))
		return err
	}
	if plan.Degraded != "" {
		ev := eventlog.New("degraded", plan.Degraded)
		ev.Backend = plan.Backend
		plan.log(ev)
	}
	ev := plan.appliedEvent(inv.Command)
	plan.log(ev)
	if inv.Verbose {
		fmt.Fprintf(inv.Stderr, "grok-sandbox: profile %s (%s), backend %s\n", printable.String(plan.Policy.Profile), printable.String(plan.Policy.Source), plan.Backend)
		plan.verbose = true
	}
	return plan.exec(path)
}

// StartDir is where the command starts: the current directory, unless
// --workspace names a workspace it is not inside (then the workspace), or
// the profile hides it (then the workspace; strict hides what is outside
// its grants).
func (plan *Plan) StartDir() string {
	p, cwd := plan.Policy, plan.Dirs.Cwd
	if (plan.workspaceFlag && !policy.Within(cwd, p.Workspace)) || (p.Enforce && !p.Exposed(cwd)) {
		return p.Workspace
	}
	return cwd
}

func (plan *Plan) exec(path string) error {
	// The same start for the backends that exec in this process (bwrap
	// enters it itself: --chdir).
	if d := plan.StartDir(); plan.Backend != BackendBwrap && d != plan.Dirs.Cwd {
		if err := os.Chdir(d); err != nil {
			return resolve.Refuse("cannot enter the workspace %s: %v", printable.String(d), err)
		}
	}
	switch plan.Backend {
	case BackendLandlock:
		if err := closeInherited(); err != nil {
			return err
		}
		return runLandlock(plan, path)
	case BackendBwrap:
		return plan.execBwrap()
	case BackendSeatbelt:
		argv, err := seatbeltArgv(plan)
		if err != nil {
			return err
		}
		return execOrFail(argv[0], argv, plan.Environ.Env)
	}
	return execOrFail(path, plan.Argv, plan.Environ.Env)
}

// execBwrap hands bwrap its descriptors and execs it. Options go through an
// --args descriptor when they are many; the command bwrap execs (the init
// stage) never does, and is checked to be there before the exec.
func (plan *Plan) execBwrap() error {
	// The bwrap selectBackend probed, found in system directories only.
	bwrap := plan.Bwrap.Path
	if bwrap == "" {
		return resolve.Refuse("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap) or choose --profile off")
	}
	l := *plan.Launch
	l.Bwrap = bwrap
	if err := closeInherited(); err != nil {
		return err
	}
	// The fixed descriptors first, so that the --args one cannot be given
	// one of their numbers.
	if err := handOver(initcfg.FDSeccomp, plan.Seccomp); err != nil {
		return err
	}
	if err := handOver(initcfg.FDInit, plan.Init); err != nil {
		return err
	}
	which, err := handOverInit(initcfg.FDSelf)
	if err != nil {
		return err
	}
	if plan.verbose {
		fmt.Fprintf(plan.stderr, "grok-sandbox: init stage: %s\n", printable.String(which))
	}
	if err := handOverEventLog(initcfg.FDEvents, plan.Dirs.GrokHome); err != nil {
		return err
	}
	if o := plan.InitShown.Observe; o != nil && o.Fuse {
		if err := handOverFuse(initcfg.FDFuse); err != nil {
			return err
		}
	}
	argv, err := viaArgsFD(l)
	if err != nil {
		return err
	}
	if err := checkBoundary(argv, l.Command); err != nil {
		return err
	}
	runtime.LockOSThread()
	if err := shieldFromTerminalSignals(); err != nil {
		return err
	}
	// bwrap runs outside the sandbox: it gets no environment but TZ set
	// empty, which it passes on to the init stage. The command's travels
	// in the init config. (The init stage keeps no local time: the event
	// log is in UTC. With TZ unset, the Go runtime would read the local
	// zone's file at every start of the init stage, for a package
	// initialiser, about 0.1 ms.)
	return execOrFail(bwrap, argv, []string{initStageEnv})
}

// checkBoundary refuses an argv whose tail is not "--" and exactly the init
// stage: whatever bwrap parses, the command it execs must be ours.
func checkBoundary(argv, command []string) error {
	n := len(command)
	if len(argv) < n+2 || argv[len(argv)-n-1] != "--" || !slices.Equal(argv[len(argv)-n:], command) {
		return resolve.Refuse("internal error: the bwrap command line does not end with the init stage; refusing to start a sandbox that could miss its layers")
	}
	for _, a := range argv[1 : len(argv)-n-1] {
		if a == "--" {
			return resolve.Refuse("internal error: a bwrap option is \"--\"; refusing to start a sandbox that could miss its layers")
		}
	}
	return nil
}

// initStageEnv is the whole environment of bwrap and the init stage (see
// execBwrap).
const initStageEnv = "TZ="

func execOrFail(prog string, argv, env []string) error {
	err := syscall.Exec(prog, argv, env)
	if errors.Is(err, syscall.ENOENT) {
		return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%s: %v", prog, err)}
	}
	return &ExitError{Code: ExitNotExecutable, Err: fmt.Errorf("cannot execute %s: %v", prog, err)}
}

// commandVisible refuses a command whose executable the profile hides: the
// sandbox could not run it, and a same-named one elsewhere on its PATH must
// not silently run instead. It returns the path to exec inside: path itself
// when the sandbox sees it (directly, or through a link strict recreates,
// such as /bin -> usr/bin), else its canonical target when only that is
// exposed.
func (plan *Plan) commandVisible(path string) (string, error) {
	p := plan.Policy
	if !p.Enforce || plan.Backend == BackendNone {
		return path, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &ExitError{Code: ExitNotFound, Err: err}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%s: %v", path, err)}
	}
	if !p.Exposed(real) {
		return "", &ExitError{Code: ExitNotFound, Err: fmt.Errorf(
			"%s is hidden by profile %s, so the sandbox cannot run it; expose it with a custom profile: [profiles.NAME] extends = %q, read_only = [%q]",
			real, p.Profile, p.Base, installRoot(real, p.Home))}
	}
	if interp := interpreterOf(real, envpolicy.Getenv(plan.Environ.Env, "PATH")); interp != "" && !p.Exposed(interp) {
		return "", &ExitError{Code: ExitNotFound, Err: fmt.Errorf(
			"%s runs with %s, which profile %s hides, so the sandbox cannot run it; expose it with a custom profile: [profiles.NAME] extends = %q, read_only = [%q]",
			real, interp, p.Profile, p.Base, installRoot(interp, p.Home))}
	}
	if p.Exposed(abs) {
		return abs, nil
	}
	for _, l := range p.Links {
		if policy.Within(abs, l.Path) {
			return abs, nil
		}
	}
	return real, nil
}

// installRoot is what to expose so that path can run: an npm prefix (the
// directory above lib/node_modules, or above node_modules), the directory
// above a bin/ (an nvm, pyenv or asdf version; not home, ~/.local or the
// system's), else path's own directory; spelled with ~ under home.
func installRoot(path, home string) string {
	root := filepath.Dir(path)
	switch {
	case strings.Contains(path, "/lib/node_modules/"):
		root = path[:strings.Index(path, "/lib/node_modules/")]
	case strings.Contains(path, "/node_modules/"):
		root = path[:strings.Index(path, "/node_modules/")]
	case filepath.Base(root) == "bin" && !slices.Contains([]string{"/", "/usr", "/usr/local", home, filepath.Join(home, ".local")}, filepath.Dir(root)):
		// An nvm, pyenv or asdf version: its bin/ needs its lib/ too.
		root = filepath.Dir(root)
	}
	if home != "" && home != "/" && policy.Within(root, home) && root != home {
		return "~" + strings.TrimPrefix(root, home)
	}
	return root
}

// interpreterOf is the interpreter a script's #! line names, every link
// resolved ("/usr/bin/env node" looks node up on path); "" for anything
// else.
func interpreterOf(script, path string) string {
	// Never blocking, and only a regular file: a FIFO planted where the
	// command resolves would otherwise hang the launch here.
	f, err := os.OpenFile(script, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	interp := fields[0]
	if filepath.Base(interp) == "env" {
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			args = args[1:]
		}
		if len(args) == 0 {
			return ""
		}
		found, err := lookPathIn(args[0], path)
		if err != nil {
			return ""
		}
		interp = found
	}
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return ""
	}
	return real
}

// Identity is who the command runs as: always you (the launcher's uid and
// gid), and how the backend keeps it so.
type Identity struct {
	UID int    `json:"uid"`
	GID int    `json:"gid"`
	How string `json:"how"`
}

// RunsAs says who the plan's command runs as.
func (plan *Plan) RunsAs() Identity {
	id := Identity{UID: os.Getuid(), GID: os.Getgid()}
	switch {
	case plan.Backend != BackendBwrap:
		id.How = "you: this backend adds no user namespace"
	case id.UID == 0:
		id.How = "you: root, mapped to root, with no capability"
	case bwrapOptions(plan.Policy, "", id.UID).MapToRoot:
		id.How = "you, in a user namespace nested in the sandbox's, whose root is only the init stage, which mounts and then starts the command"
	default:
		id.How = "you: bwrap maps your uid and gid"
	}
	return id
}

// Warnings are the policy's warnings and, last, what the backend chosen
// loses (the policy itself is not changed after resolve.Resolve).
func (plan *Plan) Warnings() []string {
	w := append([]string(nil), plan.Policy.Warnings...)
	if plan.Degraded != "" {
		w = append(w, plan.Degraded)
	}
	return w
}

// Warn writes the plan's warnings, one line each.
func Warn(w io.Writer, plan *Plan) {
	for _, msg := range plan.Warnings() {
		fmt.Fprintln(w, "grok-sandbox: warning: "+printable.String(msg))
	}
}

func (plan *Plan) appliedEvent(command []string) eventlog.Event {
	p := plan.Policy
	ev := eventlog.Event{
		Time:      eventlog.Now(),
		Event:     "applied",
		Profile:   p.Profile,
		Source:    p.Source,
		Backend:   plan.Backend,
		Workspace: p.Workspace,
		Command:   commandName(command),
		// The administrator's file, when one shaped this run.
		Requirements: p.Requirements,
	}
	switch {
	case !p.Enforce:
		ev.Event = "disabled"
		ev.Message = "Sandbox disabled."
	case plan.Backend == BackendNone:
		ev.Event = "unenforced"
		ev.Message = plan.Degraded
	}
	return ev
}

func refusedEvent(err error) eventlog.Event { return eventlog.New("refused", err.Error()) }

func (plan *Plan) log(ev eventlog.Event) {
	if ev.Profile == "" {
		ev.Profile = plan.Policy.Profile
		ev.Source = plan.Policy.Source
		ev.Workspace = plan.Policy.Workspace
	}
	if err := eventlog.Append(plan.Dirs.GrokHome, ev); err != nil && !plan.logWarned && plan.stderr != nil {
		plan.logWarned = true
		fmt.Fprintf(plan.stderr, "grok-sandbox: warning: event log not written: %s\n", printable.String(err.Error()))
	}
}

// logRefusal records a refusal that happened before a plan existed, when
// GROK_HOME can still be found.
func logRefusal(inv Invocation, err error) {
	env, lerr := resolve.LocateDirs(inv.Request, ProbeHost())
	if lerr != nil {
		return
	}
	ev := refusedEvent(err)
	ev.Profile = inv.Profile
	ev.Workspace = env.Workspace
	ev.Command = commandName(inv.Command)
	if err := eventlog.Append(env.GrokHome, ev); err != nil {
		fmt.Fprintf(inv.Stderr, "grok-sandbox: warning: event log not written: %s\n", printable.String(err.Error()))
	}
}

// commandName is what the event log records of the command: its name only,
// since arguments can carry secrets.
func commandName(command []string) string {
	if len(command) == 0 {
		return ""
	}
	return command[0]
}

// gitIdentity is user.name and user.email from your global git config
// (~/.gitconfig, then $XDG_CONFIG_HOME/git/config or ~/.config/git/config,
// the later file winning as in git), read as plain INI: [include]d files
// are not followed. Empty when unset or unreadable.
func gitIdentity(home, xdg string) (name, email string) {
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, file := range []string{filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig")} {
		data, err := readSmallFile(file)
		if err != nil {
			continue
		}
		section := ""
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			if line[0] == '[' {
				section = strings.ToLower(strings.TrimSpace(strings.Trim(line, "[]")))
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok || section != "user" {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), "\"")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "name":
				name = v // the last one wins, as in git
			case "email":
				email = v
			}
		}
	}
	return printable.String(name), printable.String(email)
}
