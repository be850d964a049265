package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/childnet"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/initproc"
	"grok-sandbox/launcher/sandboxinit/maskfs"
	"grok-sandbox/launcher/sandboxinit/pathwatch"
	"grok-sandbox/launcher/sandboxinit/proxy"
	"grok-sandbox/launcher/sandboxinit/starter"
	"grok-sandbox/launcher/sandboxinit/violations"
	"grok-sandbox/launcher/seccomp"
)

// allowNetwork is who keeps the network under the notifying rule: the
// command's own threads, and, when agent names the real agent's program,
// the one process that the command itself started to execute it.
//
// That process is chosen at its first network call: a process whose parent
// is the command and whose executable is agent's very file (device and
// inode, read from /proc/PID/exe, which the process cannot fake). Once
// chosen, only it is allowed, while it lives and still executes that file;
// a later process running the same program (a child of the agent, or a
// second one the launcher starts) never is, and none is once the command
// itself executes the program (it exec'd into the agent: its children are
// the agent's tools). It is held by a pidfd, so a
// recycled pid is never taken for it.
func allowNetwork(command int, agent *initcfg.PathID) func(tid int) bool {
	own := seccomp.AllowThreadGroup(command)
	if agent == nil {
		return own
	}
	chosen, pidfd, gone := 0, -1, false
	isAgent := func(pid int) bool {
		var st unix.Stat_t
		return unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) == nil && st.Dev == agent.Dev && st.Ino == agent.Ino
	}
	alive := func() bool { return pidfdAlive(pidfd) }
	// choose takes tid's process for the agent when it is the command's
	// child running the agent's file.
	choose := func(tid int) bool {
		tgid, err := seccomp.Tgid(tid)
		if err != nil {
			return false
		}
		// A launcher that became the program itself (exec, as Codex's
		// does on newer Node) is the agent: every process it starts is a
		// tool, whatever it runs.
		if isAgent(command) {
			return false
		}
		if ppid, err := parentOf(tgid); err != nil || ppid != command || !isAgent(tgid) {
			return false
		}
		fd, err := unix.PidfdOpen(tgid, 0)
		if err != nil {
			return false
		}
		// Still the same process: the pidfd was opened for the pid read
		// above, and it is still the command's child running the agent's
		// file.
		if ppid, err := parentOf(tgid); err != nil || ppid != command || !isAgent(tgid) {
			unix.Close(fd)
			return false
		}
		chosen, pidfd = tgid, fd
		return true
	}
	// Called from more than one goroutine: a turn of the supervisor's loop
	// left behind runs beside the next (seccomp.SuperviseChildren).
	var mu sync.Mutex
	return func(tid int) bool {
		if own(tid) {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return false
		}
		if chosen == 0 {
			if !choose(tid) {
				return false
			}
		} else if !seccomp.InThreadGroup(chosen, tid) {
			// One lookup for every other caller (the agent's tools
			// make most calls), not a status file read.
			return false
		}
		// Looked up before: if the chosen process is still alive now,
		// the pid looked up was its own (a pid is not reused while its
		// process lives).
		if !alive() {
			gone = true
			unix.Close(pidfd)
			return false
		}
		return isAgent(chosen)
	}
}

// pidfdAlive reports whether the process of pidfd has not exited. A signal
// that arrives meanwhile (this process takes SIGCHLD for every child that
// ends) interrupts even a poll that does not wait: that is no exit. Taken
// for one, it cost an agent its network for the rest of the run.
func pidfdAlive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

// parentOf is the parent pid of process pid, from /proc/PID/status.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no PPid")
}

// Supervise starts the command as a child, from a locked thread that
// first runs restrict (Landlock, for that backend), installs base (when not
// nil: the Landlock backend has no bwrap to install it) and, under
// restrict_network, a filter whose network syscalls notify this process. It
// checks that thread's layers, answers the notifications (allowed for the
// command's own threads, EACCES for every other process) until the command
// exits, reaps every other child meanwhile when reaper is set (pid 1), and
// returns the command's status (128+N for a signal, as shells do). catch,
// when not nil, is the catching of pid 1's signals its caller began early.
func Supervise(cfg *initcfg.Config, backend string, events int, restrict func() error, filters int, env []string, reaper bool, catch *initproc.Catch) int {
	arch, err := seccomp.HostArch()
	if err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
		return initcfg.ExitRefused
	}
	var notify []bpf.RawInstruction
	var cnet *childnet.Net
	var observe seccomp.Observe
	if o := cfg.Observe; o != nil && o.Paths {
		// Writes too, masks or not: a write to a mask is refused at its
		// read-only mount (EROFS) before its node is asked.
		observe = seccomp.Observe{Paths: true, Writes: true}
	}
	// A command that runs as you in a namespace of its own (cfg.User)
	// gets its filter from its starter, with the refusal of any further
	// user namespace in it.
	blockUserNS := cfg.User != nil && cfg.User.BlockUserNamespaces
	// Under bwrap the command's namespace maps its own uid and gid only
	// (root's, or yours): another id is refused with EPERM, as outside,
	// not with the kernel's EINVAL for an unmapped id. The command runs
	// with this process's ids unless a starter gives it yours.
	var ownIDs *seccomp.IDs
	if backend == "bwrap" {
		ownIDs = &seccomp.IDs{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
		if cfg.User != nil {
			ownIDs.UID, ownIDs.GID = uint32(cfg.User.UID), uint32(cfg.User.GID)
		}
	}
	var plain []bpf.RawInstruction // a filter that notifies nothing
	killable := false              // the notifying filter's listener is killable-only (seccomp.InstallWithKillableListener)
	// Under bwrap the base filter leaves setpriority with a pid to this
	// one: the supervisor lets it through for the caller's own process.
	priority := backend == "bwrap"
	prioNr, _ := seccomp.SyscallNr(arch, "setpriority")
	if cfg.Network == seccomp.NetworkNotify || observe.Paths || priority {
		network := seccomp.NetworkUnfiltered // the base filter has the rest
		if cfg.Network == seccomp.NetworkNotify {
			network = seccomp.NetworkNotify
		}
		// With the children's own namespace, their Unix sockets come
		// from it too (see childnet).
		unixNotify := cfg.ChildNet && network == seccomp.NetworkNotify
		if cfg.ChildNet && cfg.Network == seccomp.NetworkNotify {
			// No helper on its descriptor: Run has warned.
			if childnet.Ready() {
				if cnet, err = childnet.Open(arch); err != nil {
					fmt.Fprintf(os.Stderr, "grok-sandbox: warning: cannot give the processes the wrapped command starts a private loopback (%v); they get no network at all\n", err)
				}
			}
		}
		// Their sends that can name a socket are made by pid 1 (see
		// childnet), where the kernel keeps a received notification
		// pending through the caller's signals: only then may they
		// have Unix datagram sockets.
		killable = unixNotify && cnet != nil && seccomp.KillableRecv()
		// Their passing of credentials too: on a socket pair (the
		// kernel's, in the host's namespace) it would bind an automatic
		// name of the host's.
		if notify, err = seccomp.Build(seccomp.Rules{Network: network, Observe: observe, BlockUserNamespaces: blockUserNS, UnixSocketsNotify: unixNotify, PassCredNotify: unixNotify, SendNotify: killable, OwnIDs: ownIDs, PriorityNotify: priority}, arch); err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
			return initcfg.ExitRefused
		}
		if killable {
			cnet.MakeSends()
		}
	}
	if notify == nil && (blockUserNS || ownIDs != nil) {
		if plain, err = seccomp.Build(seccomp.Rules{BlockUserNamespaces: blockUserNS, OwnIDs: ownIDs}, arch); err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
			return initcfg.ExitRefused
		}
	}
	// Signals a user sends to the sandbox reach this process; pass the
	// ones that ask the command to stop on. Ctrl-C and Ctrl-\ come from
	// the terminal to the whole foreground group, the command included, so
	// they are caught (not ignored: an ignored signal would stay ignored
	// in the command, unless its caller ignored it: see cfg.Ignored) and
	// dropped here.
	//
	// Every other signal that would stop or crash this process is caught
	// too: any process in the sandbox can signal pid 1, and the Go runtime
	// turns a SIGSEGV or SIGABRT sent with kill into a crash (with a
	// traceback to the terminal) unless it is caught.
	if catch == nil {
		catch = initproc.StartCatching()
	}
	sigs := catch.C

	var v *violations.Log
	if notify != nil || cfg.Observe != nil {
		v = violations.New(cfg.Profile, backend, events, arch)
	}
	var watch *pathwatch.Watch
	if o := cfg.Observe; o != nil && o.Paths {
		watch = pathwatch.New(arch, cfg.Masks, o.Protected)
	}
	if cnet != nil && v != nil {
		v.AddrOf = cnet.AddressOf
	}
	if cnet != nil && len(cfg.AllowHosts) > 0 {
		px, err := proxy.Start(cnet, cfg.AllowHosts, v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: warning: allow_hosts: cannot start the proxy (%v); the processes the wrapped command starts reach no host\n", err)
		} else {
			env = px.Env(env)
		}
	}
	// Caught before anything of the command's runs.
	catch.Wait()
	type started struct {
		proc     *commandProcess
		listener int
		err      error
		refused  bool // the sandbox could not be set up (not the command's fault)
		// starterRefused: the starter refused to start the command, and
		// said why; it exits 125.
		starterRefused bool
	}
	ch := make(chan started, 1)
	go func() {
		// The command's filter goes on this thread only, and the command
		// is forked from it, so the command and its descendants carry it
		// while the supervisor's other threads do not. The goroutine ends
		// locked, so the filtered thread ends with it.
		runtime.LockOSThread()
		if pid, ok := starter.Held(); ok && cfg.User != nil {
			spec := starter.Spec{Path: cfg.Path, Args: cfg.Args, Env: env, Dir: cfg.Dir, UID: cfg.User.UID, GID: cfg.User.GID, Filters: filters, Ignored: cfg.Ignored}
			switch {
			case notify != nil:
				spec.Filter, spec.Listener, spec.Filters = seccomp.Encode(notify), true, filters+1
				spec.KillableRecv = killable
			case plain != nil:
				spec.Filter, spec.Filters = seccomp.Encode(plain), filters+1
			}
			running, listener, err := starter.Release(pid, spec)
			// A starter that refused has said why; its status (125) is
			// the run's.
			ch <- started{proc: &commandProcess{pid}, listener: listener, err: err, starterRefused: err != nil && running, refused: err != nil && !running}
			return
		}
		if restrict != nil {
			if err := restrict(); err != nil {
				ch <- started{err: err, refused: true}
				return
			}
		}
		listener, want := -1, filters
		switch {
		case notify != nil:
			var err error
			install := seccomp.InstallWithListener
			if killable {
				install = seccomp.InstallWithKillableListener
			}
			if listener, err = install(notify); err != nil {
				ch <- started{err: err, refused: true}
				return
			}
			want++
		case plain != nil:
			if err := seccomp.Install(plain); err != nil {
				ch <- started{err: err, refused: true}
				return
			}
			want++
		}
		if err := initproc.VerifyThread(want, reaper || os.Geteuid() == 0); err != nil {
			ch <- started{err: fmt.Errorf("%v; refusing to start the command", err), refused: true}
			return
		}
		// A signal the caller ignored starts ignored in the command: an
		// ignored disposition outlives the fork and the exec, where a
		// caught one becomes the default. This process catches it again
		// once the command runs (a signal sent meanwhile is dropped, as
		// a caught SIGINT is anyway, and the command ignores it).
		ignored := initcfg.Signals(cfg.Ignored)
		if len(ignored) > 0 {
			signal.Ignore(ignored...)
		}
		proc, err := startCommand(cfg.Path, cfg.Args, env)
		if len(ignored) > 0 {
			signal.Notify(sigs, ignored...)
		}
		ch <- started{proc: proc, listener: listener, err: err}
	}()
	st := <-ch
	if st.starterRefused {
		_, _ = st.proc.Wait()
		return initcfg.ExitRefused
	}
	if st.refused {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", st.err)
		return initcfg.ExitRefused
	}
	if st.err != nil {
		return initproc.NotFound(cfg.Args[0], st.err)
	}
	pid := st.proc.pid
	stop := make(chan struct{})
	done := make(chan error, 1)
	// The notifying filter is answered until this process exits, not only
	// while the command runs: a process the command left behind would get
	// ENOSYS from every notified syscall otherwise. Once the command is
	// gone nobody keeps the network (its pid may be recycled after the
	// reap), and file syscalls go on as before.
	var gone atomic.Bool
	forever := make(chan struct{})
	if st.listener >= 0 {
		go func() {
			var child func(seccomp.Notification, seccomp.Reply) bool
			if cnet != nil {
				child = func(n seccomp.Notification, r seccomp.Reply) bool { return cnet.Handle(n, r, v) }
			}
			if watch != nil {
				watch.SetOwn(seccomp.AllowThreadGroup(pid))
			}
			commandAllow := allowNetwork(pid, cfg.Agent)
			allow := func(tid int) bool { return !gone.Load() && commandAllow(tid) }
			if cfg.Isolated {
				allow = func(int) bool { return false }
			}
			observe := func(n seccomp.Notification, r seccomp.Reply) bool {
				if priority && n.Nr == prioNr {
					seccomp.OwnProcessOnly(n, r, 1)
					return true
				}
				return watch != nil && watch.Seen(v, n, r)
			}
			// Should the loop end on an error, the listener is closed: every
			// pending and later notified call then fails (ENOSYS) instead of
			// waiting for an answer that never comes.
			var err error
			if cfg.Network != seccomp.NetworkNotify {
				// Only the file observer's syscalls notify.
				err = seccomp.ObserveUntil(st.listener, forever, func(n seccomp.Notification, r seccomp.Reply) {
					if !observe(n, r) {
						_ = r.Continue()
					}
				})
			} else {
				err = seccomp.SuperviseChildren(st.listener, forever, allow, child, v.Record, observe)
			}
			if err != nil {
				unix.Close(st.listener)
				v.Notice(fmt.Sprintf("the supervisor stopped (%v): notified calls of the command and its children fail from now on", err))
			}
			done <- err
		}()
	} else {
		done <- nil
	}
	var reports *maskfs.Reports
	if cfg.Observe != nil && cfg.Observe.Fuse {
		if _, err := unix.FcntlInt(uintptr(initcfg.FDObserver), unix.F_GETFD, 0); err == nil && maskfs.ObserverPlaced() {
			reports = maskfs.Watch(initcfg.FDObserver, v, stop)
			if obs, err := strconv.Atoi(os.Getenv(maskfs.PidEnv)); err == nil && obs > 1 {
				go maskfs.KillIfStopped(obs)
			}
		}
	}
	go func() {
		for sig := range sigs {
			switch sig {
			case unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2:
				_ = st.proc.Signal(sig.(syscall.Signal))
			}
		}
	}()
	// Wait for the command to exit without reaping it: while it is a
	// zombie its pid cannot be recycled, so nothing else can pass for it.
	// Orphans that pid 1 inherits are reaped meanwhile. Stop answering,
	// then reap the command.
	waitCommand(pid, reaper)
	gone.Store(true)
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: supervisor: %v\n", err)
		}
	default:
	}
	if reports != nil {
		reports.Wait()
	}
	if v != nil {
		v.Flush()
		v.SayRefusedNetwork(cfg.Isolated)
	}
	ws, err := st.proc.Wait()
	if err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", cfg.Args[0], err)
		return initcfg.ExitRefused
	}
	if reaper {
		// Links made a moment before this process started are the
		// run's too (the launcher's own time).
		endGitLinks(cfg.GitDirs, launched.Add(-2*time.Second), events, cfg.Profile)
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// commandProcess is the command (or its starter, which becomes it): a
// child of this process, never reaped before Wait, so its pid names it
// alone until then.
type commandProcess struct{ pid int }

func (p *commandProcess) Signal(sig syscall.Signal) error { return unix.Kill(p.pid, sig) }

// Wait reaps the process and returns its status.
func (p *commandProcess) Wait() (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(p.pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws, err
		}
	}
}

// startCommand forks and execs the command from this thread (whose filter
// it inherits), with descriptors 0-2 and env. It is os/exec's Start without
// the pidfd probe os.StartProcess makes once per process (a forked child
// that exits at once, about 0.4 ms of a launch here): the command is never
// reaped before Wait, so its pid serves. env is deduplicated as os/exec
// does it (the last of a name wins).
func startCommand(path string, args, env []string) (*commandProcess, error) {
	seen := map[string]int{}
	var dedup []string
	for _, kv := range env {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			dedup[i] = kv
			continue
		}
		seen[k] = len(dedup)
		dedup = append(dedup, kv)
	}
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{Env: dedup, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return &commandProcess{pid}, nil
}

// waitCommand returns once pid has exited, leaving it unreaped. With reaper
// set it reaps every other child that exits meanwhile.
func waitCommand(pid int, reaper bool) {
	for {
		var info unix.Siginfo
		which, id := unix.P_PID, pid
		if reaper {
			which, id = unix.P_ALL, 0
		}
		err := unix.Waitid(which, id, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		got := siginfoPid(&info)
		if got == pid || !reaper {
			return
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(got, &ws, unix.WNOHANG, nil)
	}
}

// siginfoPid is si_pid of a SIGCHLD siginfo: the first field of the union,
// after si_signo, si_errno, si_code and padding (16 bytes on 64-bit).
func siginfoPid(info *unix.Siginfo) int {
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), 16)))
}
