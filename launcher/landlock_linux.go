package launcher

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/initproc"
	"grok-sandbox/launcher/seccomp"
)

// LandlockABI is the kernel's Landlock ABI, 0 without Landlock.
func LandlockABI() int { return landlock.ABI() }

func planLandlock(p *policy.Policy, abi int) (*landlock.Ruleset, error) {
	return landlock.RulesetFor(p, abi)
}

// runLandlock is the Landlock backend: this process restricts the thread
// that starts the command (no capabilities, then the ruleset, then the base
// seccomp filter), checks that thread's layers, and execs the command, or,
// when its children must lose the network, forks it under the notifying
// filter and supervises it. It returns only on failure or with the
// supervised command's status.
func runLandlock(plan *Plan, path string) error {
	p := plan.Policy
	prog, err := buildProgram(baseRules(p))
	if err != nil {
		return err
	}
	restrict := func() error {
		if err := initproc.DropAllCapabilities(); err != nil {
			return err
		}
		if err := plan.Landlock.Apply(); err != nil {
			return err
		}
		return seccomp.Install(prog)
	}
	runtime.LockOSThread()
	// The supervisor catches every signal: the ones the caller ignored
	// it ignores again for the command's start (see Supervise).
	cfg := &initcfg.Config{Profile: p.Profile, Path: path, Args: plan.Argv, Network: commandNetwork(p), Ignored: initcfg.IgnoredBy(signal.Ignored)}
	if cfg.Network != seccomp.NetworkNotify {
		if err := restrict(); err != nil {
			return resolve.Refuse("%v", err)
		}
		if err := initproc.VerifyThread(1, os.Geteuid() == 0); err != nil {
			return resolve.Refuse("%v; refusing to start the command", err)
		}
		err := syscall.Exec(path, plan.Argv, plan.Environ.Env)
		return &ExitError{Code: initproc.NotFound(plan.Argv[0], err)}
	}
	// Without bwrap there is no sandbox user namespace in which to make the
	// children's network namespace: they keep today's rule, no socket at
	// all, and say so.
	if plan.stderr != nil {
		msg := "grok-sandbox: warning: the Landlock backend cannot give the processes the wrapped command starts a private loopback; they get no network at all"
		if len(p.Network.AllowHosts) > 0 {
			msg += ", and allow_hosts is not used"
		}
		fmt.Fprintln(plan.stderr, msg)
	}
	// The supervisor stays on the host, outside any namespace: nothing the
	// command starts may open its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return resolve.Refuse("cannot make the supervisor non-dumpable: %v", err)
	}
	events := -1
	if f, err := eventlog.Open(plan.Dirs.GrokHome); err == nil {
		events = int(f.Fd())
		defer f.Close()
	} else if plan.stderr != nil {
		fmt.Fprintf(plan.stderr, "grok-sandbox: warning: violations will not be logged: %s\n", printable.String(err.Error()))
	}
	code := sandboxinit.Supervise(cfg, BackendLandlock, events, restrict, 1, plan.Environ.Env, false, nil)
	return &ExitError{Code: code}
}
