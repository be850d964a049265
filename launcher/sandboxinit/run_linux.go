package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/sandboxinit/childnet"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/initproc"
	"grok-sandbox/launcher/sandboxinit/maskfs"
	"grok-sandbox/launcher/sandboxinit/starter"
)

// Run is grok-sandbox's own stage inside the sandbox: bwrap execs it as
// "/proc/self/fd/12 __sandbox-init FD PROFILE [--child-net] [--as-user] [--masked]", as pid 1 of the
// sandbox's pid namespace, carrying the base seccomp filter. It reads its
// config (the command among it) from FD, then:
//
//  1. makes itself non-dumpable, so that nothing in the sandbox can open
//     its memory, whatever the kernel's ptrace policy;
//  2. when bwrap had no room for every mask, mounts them (with the
//     capabilities bwrap left for this), then drops every capability on
//     every thread and closes every descriptor of that work, so nothing
//     privileged survives (where the Go runtime cannot change every
//     thread, it drops them on its own and execs itself again with
//     --masked instead);
//  3. checks that every layer it was asked for is in force (the filter,
//     no_new_privs, no capability, the read-only and masked paths) and
//     refuses to start the command otherwise;
//  4. starts the command with no descriptor of grok-sandbox's, under an
//     extra filter when its children must lose the network (and then
//     answers that filter's notifications), reaps every orphan as pid 1
//     must, and exits with the command's status.
func Run(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "grok-sandbox: init: "+format+"\n", a...)
		return initcfg.ExitRefused
	}
	// The starter stays dumpable until it execs the command (which is
	// dumpable anyway): the init stage writes its uid and gid maps through
	// /proc, whose files of a non-dumpable process only root outside the
	// sandbox may open. Nothing but the init stage and its helpers runs
	// before it execs.
	if len(args) == 1 && args[0] == starter.Arg {
		return starter.Run()
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("cannot make the init stage non-dumpable: %v", err)
	}
	if len(args) == 1 && args[0] == childnet.HelperArg {
		return childnet.RunHelper()
	}
	if len(args) == 2 && args[0] == maskfs.ObserverArg {
		return maskfs.RunObserver(args)
	}

	flags := args[min(2, len(args)):]
	flag := func(name string) bool {
		if len(flags) > 0 && flags[0] == name {
			flags = flags[1:]
			return true
		}
		return false
	}
	childNet, asUser, masked := flag(initcfg.ChildNetArg), flag(initcfg.AsUserArg), flag("--masked")
	if len(args) < 2 || len(flags) > 0 {
		return fail("usage: %s FD PROFILE [%s] [%s] [--masked]", initcfg.Command, initcfg.ChildNetArg, initcfg.AsUserArg)
	}
	// What this stage began with, before it opens anything.
	atStart, err := openFDs()
	if err != nil {
		return fail("%v", err)
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		return fail("bad descriptor %q", args[0])
	}
	// The children's private network namespace is made on a thread of
	// its own while this one reads the config and mounts (its unshare is
	// about a millisecond of the kernel's), and joined below, before any
	// capability is dropped. The command line says it is wanted (the
	// config, read later, must agree), so that it starts first of all,
	// once the carried descriptors are reserved.
	type prepared struct {
		helper *childnet.Helper
		err    error
	}
	var preparing chan prepared
	// The command's starter too: its own start (a Go program's, in a
	// namespace of its own) then overlaps the config and the layers' work
	// until its maps are written (Finish, below). It waits for its spec,
	// and enters the command's directory only then (starter.Release),
	// after the masks.
	var pending *starter.Pending
	reserved := false
	if (childNet || asUser) && !masked {
		if err := reserveFDs(); err != nil {
			return fail("%v", err)
		}
		reserved = true
	}
	if childNet && !masked {
		preparing = make(chan prepared, 1)
		go func() {
			h, err := childnet.PrepareHelper()
			preparing <- prepared{h, err}
		}()
	}
	if asUser && !masked {
		var err error
		if pending, err = starter.Begin(); err != nil {
			return fail("%v", err)
		}
	}
	if _, ok := atStart[initcfg.FDNetHelper]; ok && masked {
		// The first run's net helper, carried across the re-exec.
		childnet.AdoptHelper()
	}
	if _, ok := atStart[initcfg.FDObserver]; ok && masked {
		maskfs.AdoptObserver()
	}

	data, err := initproc.ReadFD(fd)
	if err != nil {
		return fail("reading the config: %v", err)
	}
	var cfg initcfg.Config
	if err := initcfg.Decode(data, &cfg); err != nil {
		return fail("bad config: %v", err)
	}
	if cfg.Path == "" || len(cfg.Args) == 0 {
		return fail("bad config: no command")
	}
	if cfg.Profile != args[1] {
		return fail("bad config: profile %q, command line says %q", cfg.Profile, args[1])
	}
	if cfg.ChildNet != childNet {
		return fail("bad config: child_loopback %v, command line says %v", cfg.ChildNet, childNet)
	}
	if (cfg.User != nil) != asUser {
		return fail("bad config: the command's user does not match the command line (%s)", initcfg.AsUserArg)
	}
	if err := initcfg.CheckIgnored(cfg.Ignored); err != nil {
		return fail("%v", err)
	}

	runtime.LockOSThread()
	// Signals are caught while the layers go on (see initproc.Catch).
	catch := initproc.StartCatching()
	staged := (len(cfg.Masks) > 0 || len(cfg.Binds) > 0 || cfg.ChildNet) && !masked
	starterPid := 0
	if staged && !reserved {
		if err := reserveFDs(); err != nil {
			return fail("%v", err)
		}
	}
	if !masked {
		// The staged layers first, then every layer's identity in the
		// view the command will have, then the masks onto it.
		if err := moveStaged(cfg.Binds); err != nil {
			return fail("%v", err)
		}
		if err := verifyIdentity(cfg.Check); err != nil {
			return fail("%v; refusing to start the command", err)
		}
	}
	observer := 0 // the mask observer's pid
	var kept map[int]fdIdentity
	if staged {
		if len(cfg.Masks) > 0 || len(cfg.Binds) > 0 {
			var err error
			// The launcher's /dev/fuse only where it handed one over:
			// by now a descriptor of this stage's own may have taken
			// the number.
			_, fuse := atStart[initcfg.FDFuse]
			if observer, err = mountMasks(cfg.Masks, fuse && cfg.Observe != nil && cfg.Observe.Fuse); err != nil {
				return fail("%v", err)
			}
			// An observer served from this process keeps its
			// descriptors: these, by what they refer to, pass the check
			// below.
			if kept, err = identities(maskfs.Kept()); err != nil {
				return fail("%v", err)
			}
		}
		// The children's private network namespace, made (above) while
		// this process still holds the capabilities for it, by a thread
		// that stays in it and makes their sockets (or starts the net
		// helper there) once no thread holds a capability (see
		// launcher/sandboxinit/childnet).
		helperFailed := func(err error) {
			fmt.Fprintf(os.Stderr, "grok-sandbox: warning: cannot give the processes the wrapped command starts a private loopback (%v); they get no network at all\n", err)
		}
		var helper *childnet.Helper
		if preparing != nil {
			p := <-preparing
			if helper = p.helper; p.err != nil {
				helperFailed(p.err)
			}
		}
		startHelper := func() {
			if helper != nil {
				if err := helper.Start(); err != nil {
					helperFailed(err)
				}
			}
		}
		if pending != nil {
			var err error
			if starterPid, err = pending.Finish(cfg.User); err != nil {
				return fail("%v", err)
			}
		}
		var env []string
		if observer > 0 {
			env = append(env, maskfs.PidEnv+"="+strconv.Itoa(observer))
		}
		if starterPid > 0 {
			env = append(env, starter.PidEnv+"="+strconv.Itoa(starterPid))
		}
		// Every thread loses every capability at once, and the stage
		// goes on here: one Go program start less per launch. Where the
		// runtime cannot (a binary linked with cgo), this thread drops
		// them and the stage execs itself again, which leaves one thread.
		err := initproc.DropCapabilitiesEverywhere()
		if err == nil {
			// The namespace's thread, capability-free now, serves the
			// children's sockets itself: no helper process.
			if helper != nil {
				if err := helper.Serve(); err != nil {
					helperFailed(err)
				}
			}
			err = closePrivileged(atStart, kept)
		}
		switch {
		case err == nil:
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				if err := os.Setenv(k, v); err != nil {
					return fail("%v", err)
				}
			}
		case errors.Is(err, initproc.ErrOneThreadOnly):
			if len(kept) > 0 {
				// The observer's goroutines would end with the exec, and
				// the touches of masks go unseen.
				return fail("cannot drop the capabilities of every thread, and the mask observer runs in this process; refusing to start the command")
			}
			startHelper()
			if err := initproc.DropCapabilities(); err != nil {
				return fail("%v", err)
			}
			if _, err := unix.Seek(fd, 0, 0); err != nil {
				return fail("rewinding the config: %v", err)
			}
			argv := []string{"grok-sandbox", initcfg.Command, args[0], args[1]}
			if childNet {
				argv = append(argv, initcfg.ChildNetArg)
			}
			if asUser {
				argv = append(argv, initcfg.AsUserArg)
			}
			argv = append(argv, "--masked")
			err := syscall.Exec("/proc/self/exe", argv, env)
			return fail("re-exec after masking: %v", err)
		default:
			return fail("%v", err)
		}
	}
	unix.Close(fd)
	if _, held := starter.Held(); cfg.User != nil && !held {
		return fail("the command must run as uid %d, and its starter is missing; refusing to start it", cfg.User.UID)
	}
	if cfg.Dir != "" {
		// After the masks: a working directory bwrap entered before they
		// were mounted would still reach what they cover.
		if err := unix.Chdir(cfg.Dir); err != nil {
			return fail("cannot enter %s: %v", cfg.Dir, err)
		}
	}
	if err := initproc.DropAllCapabilities(); err != nil {
		return fail("%v", err)
	}
	if err := initproc.VerifyThread(cfg.Check.Filters, true); err != nil {
		return fail("%v; refusing to start the command", err)
	}
	if err := initproc.VerifyAllThreads(); err != nil {
		return fail("%v; refusing to start the command", err)
	}
	if err := verifyPaths(cfg.Check); err != nil {
		return fail("%v; refusing to start the command", err)
	}
	// Nothing of grok-sandbox's reaches the command: the descriptors bwrap
	// left (the executable, the event log) stay here only.
	if err := initproc.CloseFrom(3); err != nil {
		return fail("cannot close the launcher's descriptors: %v", err)
	}
	events := -1
	if _, err := unix.FcntlInt(uintptr(initcfg.FDEvents), unix.F_GETFD, 0); err == nil {
		events = initcfg.FDEvents
	}
	return Supervise(&cfg, "bwrap", events, nil, cfg.Check.Filters, cfg.Env, true, catch)
}

// carriedFDs are the descriptors the init stage's first run makes and
// keeps across its re-exec, at fixed numbers the launcher does not hand
// over.
var carriedFDs = []int{initcfg.FDNetHelper, initcfg.FDObserver, initcfg.FDStarter}

// reserveFDs holds each of carriedFDs with a placeholder (close-on-exec,
// so the re-exec drops what was not replaced), before anything opens a
// descriptor: otherwise an open could land on one of those numbers, and
// placing a channel there would close it (the observer's channel itself
// once: every report of the run was lost, EPIPE).
func reserveFDs() error {
	for _, fd := range carriedFDs {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			return fmt.Errorf("descriptor %d is open already; refusing to start", fd)
		}
		null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open /dev/null: %v", err)
		}
		if null != fd {
			err = unix.Dup3(null, fd, unix.O_CLOEXEC)
			unix.Close(null)
			if err != nil {
				return fmt.Errorf("dup3: %v", err)
			}
		}
	}
	return nil
}

// fdIdentity is what a descriptor refers to: its file's device and inode.
type fdIdentity struct{ dev, ino uint64 }

// openFDs is this process's open descriptors, each with what it refers to
// (a number alone could have been closed and reused meanwhile).
func openFDs() (map[int]fdIdentity, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("cannot list the init stage's descriptors: %v", err)
	}
	fds := map[int]fdIdentity{}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil { // not ReadDir's own, closed by now
				fds[fd] = fdIdentity{uint64(st.Dev), st.Ino}
			}
		}
	}
	return fds, nil
}

// identities is what each of fds refers to.
func identities(fds []int) (map[int]fdIdentity, error) {
	ids := map[int]fdIdentity{}
	for _, fd := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("descriptor %d: %v", fd, err)
		}
		ids[fd] = fdIdentity{uint64(st.Dev), st.Ino}
	}
	return ids, nil
}

// closePrivileged leaves the init stage with the descriptors a re-exec
// would have: the placeholders of carriedFDs that no channel replaced
// (close-on-exec) are closed. Then every descriptor must be one the stage
// began with, still referring to the same file (given by bwrap, or the Go
// runtime's before main), a carried channel, or one the runtime or os/exec
// made since (the poller, pidfds of the helpers): any other (a mount's or
// a directory's, say) refuses the launch, since it could reach what the
// masks cover. kept are the in-process mask observer's own (its FUSE
// connection and its reports' end), each still referring to what it did.
func closePrivileged(atStart, kept map[int]fdIdentity) error {
	for _, fd := range carriedFDs {
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC != 0 {
			unix.Close(fd)
		}
	}
	now, err := openFDs()
	if err != nil {
		return err
	}
	for fd, id := range now {
		if was, ok := atStart[fd]; (ok && was == id) || slices.Contains(carriedFDs, fd) {
			continue
		}
		if k, ok := kept[fd]; ok && k == id {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		switch target {
		case "anon_inode:[eventpoll]", "anon_inode:[eventfd]", "anon_inode:[pidfd]":
			continue
		}
		return fmt.Errorf("descriptor %d (%s) is left open after the masks were mounted; refusing to start the command", fd, printable.String(target))
	}
	return nil
}
