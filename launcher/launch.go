package launcher

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"grok-sandbox/argv"
	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/sbpl"
)

// Exit statuses of grok-sandbox itself (SPEC §1); a command that runs passes
// its own status through exec.
const (
	ExitRefused       = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
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
	Request
	Command []string
	Verbose bool
	Stderr  io.Writer
}

// Plan is everything decided before exec: nothing below it reads config.
type Plan struct {
	Selection Selection
	Config    *Config
	Env       Env
	Policy    *policy.Policy
	Environ   envpolicy.Result
	Backend   string // "bwrap", "none" (off), "seatbelt"
	Argv      []string
	// CommandAt is the index in Argv of the "--" before the command.
	CommandAt int
	// Seccomp and Init are the contents of the descriptors bwrap gets
	// (fdSeccomp, fdInit); nil when not used.
	Seccomp []byte
	Init    []byte
	// Seatbelt is the rendered profile on the darwin target.
	Seatbelt *sbpl.Policy
	// Bwrap is what was found of bubblewrap on a Linux host.
	Bwrap BwrapInfo
	// Landlock is the ruleset when bwrap is not usable.
	Landlock *landlock.Ruleset
	// Degraded says what is lost when the preferred backend is not used.
	Degraded string
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
	env, err := LocateEnv(inv.Request)
	if err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(env.GrokHome, env.Workspace)
	if err != nil {
		return nil, err
	}
	sel, err := Select(inv.Request, cfg)
	if err != nil {
		return nil, err
	}
	pol, err := Resolve(inv.Request, env, cfg, sel)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Selection: sel, Config: cfg, Env: env, Policy: pol}
	if err := plan.selectBackend(); err != nil {
		return nil, err
	}
	if plan.Backend == BackendBwrap && pol.Target == runtime.GOOS && needsInit(pol) {
		if _, err := exposeSelf(pol); err != nil {
			return nil, err
		}
	}
	forced := map[string]string{
		"GROK_SANDBOX_PROFILE": pol.Profile,
		"GROK_SANDBOX_BACKEND": plan.Backend,
	}
	if plan.Backend == BackendNone {
		forced = nil
	}
	plan.Environ = envpolicy.Apply(inv.Environ, cfg.Env, pol.Target, forced)
	return plan, nil
}

// selectBackend chooses how the policy is enforced (SPEC §9): bwrap when it
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
	plan.Bwrap = FindBwrap(plan.Env.GrokHome, true)
	if plan.Bwrap.Usable {
		plan.Backend = BackendBwrap
		return nil
	}
	why := plan.Bwrap.Reason
	if abi := landlockABI(); abi > 0 {
		if len(p.Deny) > 0 {
			return refuse("profile %s has deny entries, and only bubblewrap can hide paths: %s", p.Profile, why)
		}
		rs, err := planLandlock(p, abi)
		if err != nil {
			return refuse("profile %s cannot be enforced with Landlock (%v), and %s", p.Profile, err, why)
		}
		plan.Backend, plan.Landlock = BackendLandlock, rs
		plan.Degraded = fmt.Sprintf("%s; enforcing profile %s with Landlock (ABI %d) instead: no pid, user or mount namespace, no fresh /dev or /proc, and protected files keep their modes changeable (see `grok-sandbox explain`)", why, p.Profile, abi)
		p.Warnings = append(p.Warnings, plan.Degraded)
		return nil
	}
	const noLandlock = "Landlock is not available either (it needs Linux 5.13 or later with Landlock enabled)"
	if p.Base == Devbox && p.Source == "built-in" {
		plan.Backend = BackendNone
		plan.Degraded = fmt.Sprintf("%s, and %s: devbox runs UNSANDBOXED", why, noLandlock)
		p.Warnings = append(p.Warnings, plan.Degraded)
		return nil
	}
	return refuse("%s, and %s: profile %s cannot be enforced", why, noLandlock, p.Profile)
}

// Render fills in the argv for the plan's backend. For the host target it
// prepares what the argv refers to (mask sources) when prepare is true.
func (plan *Plan) Render(command []string, prepare bool) error {
	p := plan.Policy
	switch plan.Backend {
	case BackendNone, BackendLandlock:
		plan.Argv = append([]string(nil), command...)
		return nil
	case BackendBwrap:
		opts := argv.Options{
			Bwrap:    "bwrap",
			MaskFile: filepath.Join(plan.Env.GrokHome, maskDirName, "file"),
			MaskDir:  filepath.Join(plan.Env.GrokHome, maskDirName, "dir"),
			Chdir:    plan.Env.Cwd,
		}
		if !p.Exposed(opts.Chdir) {
			opts.Chdir = p.Workspace
		}
		initCfg, err := plan.initStage(&opts)
		if err != nil {
			return err
		}
		if initCfg != nil {
			if plan.Init, err = encodeInit(initCfg); err != nil {
				return err
			}
		} else {
			prog, err := filterProgram(p)
			if err != nil {
				return err
			}
			plan.Seccomp = encodeProgram(prog)
		}
		if prepare {
			path, err := exec.LookPath("bwrap")
			if err != nil {
				return refuse("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: sudo apt-get install bubblewrap) or choose --profile off")
			}
			opts.Bwrap = path
			if len(p.Masks) > 0 {
				if err := prepareMasks(plan.Env.GrokHome); err != nil {
					return err
				}
			}
		}
		plan.Argv = argv.Render(p, opts, command)
		plan.CommandAt = len(plan.Argv) - len(command) - 1
		return nil
	case BackendSeatbelt:
		return plan.renderSeatbelt(command)
	}
	return refuse("the %s backend cannot run on %s", plan.Backend, p.Target)
}

const maskDirName = ".sandbox-masks"

// prepareMasks makes sure the mask sources exist with mode 0000 and are what
// they claim to be; they are re-checked on every launch because the user
// (outside any sandbox) could have changed them.
func prepareMasks(grokHome string) error {
	root := filepath.Join(grokHome, maskDirName)
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return refuse("cannot create %s: %v", root, err)
	}
	if err := ensureReal(root, true); err != nil {
		return err
	}
	for _, m := range []struct {
		name string
		dir  bool
	}{{"file", false}, {"dir", true}} {
		path := filepath.Join(root, m.name)
		if err := ensureReal(path, m.dir); err != nil {
			return err
		}
		if m.dir {
			if ents, err := os.ReadDir(path); err == nil && len(ents) > 0 {
				return refuse("mask directory %s is not empty; remove its contents", path)
			}
		} else if fi, err := os.Lstat(path); err == nil && fi.Size() != 0 {
			if err := os.Truncate(path, 0); err != nil {
				return refuse("mask file %s: %v", path, err)
			}
		}
		if err := os.Chmod(path, 0); err != nil {
			return refuse("cannot make %s unreadable: %v", path, err)
		}
	}
	return nil
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
		return refuse("no command given; usage: grok-sandbox run [--profile NAME] -- COMMAND [ARG...]")
	}
	plan, err := Prepare(inv)
	if err != nil {
		logRefusal(inv, err)
		return err
	}
	warn(inv.Stderr, plan)
	if plan.Selection.By == "default" {
		fmt.Fprintln(inv.Stderr, "grok-sandbox: no profile chosen: running unsandboxed (choose one with --profile NAME, GROK_SANDBOX=NAME, or [sandbox] profile in "+Printable(plan.Config.GeneralFile)+")")
	}
	if _, err := lookPathIn(inv.Command[0], getenv(plan.Environ.Env, "PATH")); err != nil {
		plan.log(refusedEvent(err))
		return err
	}
	if err := plan.Render(inv.Command, true); err != nil {
		plan.log(refusedEvent(err))
		return err
	}
	if plan.Degraded != "" {
		ev := newEvent("degraded", plan.Degraded)
		ev.Backend = plan.Backend
		plan.log(ev)
	}
	ev := plan.appliedEvent(inv.Command)
	plan.log(ev)
	if inv.Verbose {
		fmt.Fprintf(inv.Stderr, "grok-sandbox: profile %s (%s), backend %s\n", Printable(plan.Policy.Profile), Printable(plan.Policy.Source), plan.Backend)
	}
	return plan.exec()
}

func (plan *Plan) exec() error {
	if plan.Backend == BackendLandlock {
		if err := closeInherited(); err != nil {
			return err
		}
		return runLandlock(plan)
	}
	prog := plan.Argv[0]
	if plan.Backend == BackendNone {
		path, err := lookPathIn(prog, getenv(plan.Environ.Env, "PATH"))
		if err != nil {
			return err
		}
		prog = path
	}
	argv := plan.Argv
	if plan.Backend == BackendBwrap {
		if err := closeInherited(); err != nil {
			return err
		}
		// The fixed descriptors first, so that the --args one cannot be
		// given one of their numbers.
		if err := handOver(fdSeccomp, plan.Seccomp); err != nil {
			return err
		}
		if err := handOver(fdInit, plan.Init); err != nil {
			return err
		}
		var err error
		if argv, err = viaArgsFD(argv, plan.CommandAt); err != nil {
			return err
		}
	}
	if plan.Backend == BackendSeatbelt {
		var err error
		if argv, err = seatbeltArgv(plan); err != nil {
			return err
		}
	}
	if plan.Backend == BackendBwrap {
		runtime.LockOSThread()
		if err := shieldFromTerminalSignals(); err != nil {
			return err
		}
	}
	err := syscall.Exec(prog, argv, plan.Environ.Env)
	if errors.Is(err, syscall.ENOENT) {
		return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%s: %v", prog, err)}
	}
	return &ExitError{Code: ExitNotExecutable, Err: fmt.Errorf("cannot execute %s: %v", prog, err)}
}

func warn(w io.Writer, plan *Plan) {
	for _, msg := range plan.Policy.Warnings {
		fmt.Fprintln(w, "grok-sandbox: warning: "+Printable(msg))
	}
}

func (plan *Plan) appliedEvent(command []string) Event {
	p := plan.Policy
	ev := Event{
		Time:      time.Now().UTC().Format(time.RFC3339Nano),
		Event:     "applied",
		Profile:   p.Profile,
		Source:    p.Source,
		Backend:   plan.Backend,
		Workspace: p.Workspace,
		Command:   commandName(command),
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

func newEvent(kind, message string) Event {
	return Event{Time: time.Now().UTC().Format(time.RFC3339Nano), Event: kind, Message: message}
}

func refusedEvent(err error) Event { return newEvent("refused", err.Error()) }

func (plan *Plan) log(ev Event) {
	if ev.Profile == "" {
		ev.Profile = plan.Policy.Profile
		ev.Source = plan.Policy.Source
		ev.Workspace = plan.Policy.Workspace
	}
	_ = AppendEvent(plan.Env.GrokHome, ev)
}

// logRefusal records a refusal that happened before a plan existed, when
// GROK_HOME can still be found.
func logRefusal(inv Invocation, err error) {
	env, lerr := LocateEnv(inv.Request)
	if lerr != nil {
		return
	}
	ev := refusedEvent(err)
	ev.Profile = inv.Profile
	ev.Workspace = env.Workspace
	ev.Command = commandName(inv.Command)
	_ = AppendEvent(env.GrokHome, ev)
}

// commandName is what the event log records of the command: its name only,
// since arguments can carry secrets.
func commandName(command []string) string {
	if len(command) == 0 {
		return ""
	}
	return command[0]
}
