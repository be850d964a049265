package starter

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/initproc"
	"grok-sandbox/launcher/seccomp"
)

// Arg is the init stage's argument that runs the starter.
const Arg = "--starter"

// PidEnv carries the starter's pid across the init stage's re-exec.
const PidEnv = "GROK_SANDBOX_STARTER"

// Spec is what the init stage sends the starter.
type Spec struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	UID  int      `json:"uid"`
	GID  int      `json:"gid"`
	// Filter is the command's filter (empty: none), as the kernel's
	// struct sock_filter array (seccomp.Encode: one base64 string, where
	// an array of instructions took JSON about 1 ms to write and read
	// back on the launch's critical path); Listener, whether it notifies
	// (the starter sends its listener back).
	Filter   []byte `json:"filter"`
	Listener bool   `json:"listener"`
	// KillableRecv: the listener keeps a received notification pending
	// through the caller's signals (seccomp.InstallWithKillableListener).
	KillableRecv bool `json:"killable_recv"`
	// Filters is how many filters the starter's thread must carry.
	Filters int `json:"filters"`
	// Ignored are the signals the command starts ignoring
	// (initcfg.Config.Ignored); every other one starts at its default.
	Ignored []int `json:"ignored_signals,omitempty"`
}

// Fork starts the starter in a user namespace of its own, writes
// its maps (u's ids onto this namespace's 0, setgroups denied) through a
// private, writable view of /proc, and keeps the channel to it on
// initcfg.FDStarter. It returns the starter's pid. The caller holds the
// capabilities of the sandbox's user namespace.
func Fork(u *initcfg.User) (int, error) {
	p, err := Begin()
	if err != nil {
		return 0, err
	}
	return p.Finish(u)
}

// Pending is a starter that Begin started and Finish has not mapped yet.
type Pending struct {
	pid  int
	ours int // our end of its channel
}

// Finish is the rest of Fork: it waits for the starter to run, writes its
// maps (u's ids) and places its channel. The caller still holds the
// capabilities.
func (p *Pending) Finish(u *initcfg.User) (int, error) { return finishFork(p.pid, p.ours, u) }

// Begin is the first half of Fork: it starts the starter and returns at
// once, so that the starter's own start (a Go program's) overlaps the
// caller's work until Finish. It needs nothing of the config: the init
// stage begins it before reading that.
//
// The starter is forked and execed with syscall.ForkExec, not os/exec:
// os.StartProcess first probes pidfd support by forking a child that exits
// at once (about 0.4 ms, here on the launch's critical path). The starter
// is this process's child, never reaped before the end, so its pid names it.
func Begin() (*Pending, error) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %v", err)
	}
	var pid int
	err = initproc.WithNothingInherited(func() error {
		var err error
		pid, err = syscall.ForkExec("/proc/self/exe", []string{"grok-sandbox", initcfg.Command, Arg}, &syscall.ProcAttr{
			// No local time, as the init stage (the zone file unread).
			Env:   []string{"TZ="},
			Files: []uintptr{0, 1, 2, uintptr(sp[1])},
			Sys: &syscall.SysProcAttr{
				Cloneflags: unix.CLONE_NEWUSER,
				// Kept across its exec (it is not root in its namespace), so
				// that it can empty its bounding set, which a new user
				// namespace always starts full.
				AmbientCaps: []uintptr{unix.CAP_SETPCAP},
			},
		})
		return err
	})
	unix.Close(sp[1])
	if err != nil {
		unix.Close(sp[0])
		return nil, fmt.Errorf("cannot start the command's starter: %v", err)
	}
	return &Pending{pid: pid, ours: sp[0]}, nil
}

// finishFork is Finish for the starter pid, whose channel is ours.
func finishFork(pid, ours int, u *initcfg.User) (int, error) {
	sp := [2]int{ours, -1}
	fail := func(err error) (int, error) {
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		unix.Close(sp[0])
		return 0, err
	}
	// ForkExec returns once the exec is past its point of no return. The
	// maps are written at once, while the starter's own start (a Go
	// program's, about 2 ms here) goes on: they do not depend on it.
	// Should the kernel not have marked the new program dumpable yet, its
	// /proc files are root's of a namespace with no map yet, and opening
	// its setgroups fails (EACCES: seen once in the suite's parallel runs
	// on a loaded machine, when the maps waited for nothing): then they
	// are written once the starter says it runs (Release skips its word
	// otherwise).
	wrote, err := writeMaps(pid, u)
	if !wrote && errors.Is(err, unix.EACCES) {
		if err := awaitReady(sp[0]); err != nil {
			return fail(fmt.Errorf("the command's starter did not start: %v", err))
		}
		_, err = writeMaps(pid, u)
	}
	if err != nil {
		return fail(fmt.Errorf("cannot map your uid and gid for the command: %v", err))
	}
	if err := initproc.PlaceFD(sp[0], initcfg.FDStarter); err != nil {
		sp[0] = -1
		return fail(err)
	}
	return pid, nil
}

// readyByte is what the starter writes first, once it runs.
const readyByte = 'r'

// awaitReady waits, a bounded time, for the starter's readyByte on fd.
func awaitReady(fd int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("no word within 30 s")
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		k, err := unix.Poll(pfd, int(left/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if k == 0 {
			continue
		}
		var b [1]byte
		n, err := unix.Read(fd, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 || b[0] != readyByte {
			return fmt.Errorf("it exited (%v)", err)
		}
		return nil
	}
}

// writeMaps writes pid's setgroups, uid_map and gid_map. /proc is
// read-only in the sandbox (so that no process can write another's
// memory): the maps are written through a detached, writable copy of its
// mount that no path reaches and that is closed right after. wrote says
// whether anything was written (an error before that changed nothing).
func writeMaps(pid int, u *initcfg.User) (wrote bool, err error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, "/proc", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("open_tree /proc: %v", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return false, fmt.Errorf("mount_setattr: %v", err)
	}
	write := func(name, data string) error {
		fd, err := unix.Openat(tree, strconv.Itoa(pid)+"/"+name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, []byte(data)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		wrote = true
		return nil
	}
	if err := write("setgroups", "deny"); err != nil {
		return wrote, err
	}
	if err := write("uid_map", fmt.Sprintf("%d 0 1\n", u.UID)); err != nil {
		return wrote, err
	}
	return wrote, write("gid_map", fmt.Sprintf("%d 0 1\n", u.GID))
}

// Held is the starter the init stage's first run made, if any.
func Held() (int, bool) {
	pid, err := strconv.Atoi(os.Getenv(PidEnv))
	if err != nil || pid <= 1 {
		return 0, false
	}
	if _, err := unix.FcntlInt(uintptr(initcfg.FDStarter), unix.F_GETFD, 0); err != nil {
		return 0, false
	}
	return pid, true
}

// Release sends the starter its spec and waits for its answer: the
// filter's listener (when it notifies) or its word that all is in place.
// The starter then execs the command. It returns whether the starter
// still runs (it has exited, or will, when it refused after reading the
// spec) with the listener.
func Release(pid int, spec Spec) (started bool, listener int, err error) {
	data, err := initcfg.Encode(&spec)
	if err != nil {
		return false, -1, err
	}
	for len(data) > 0 {
		n, err := unix.Write(initcfg.FDStarter, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, -1, fmt.Errorf("cannot reach the command's starter: %v", err)
		}
		data = data[n:]
	}
	if err := unix.Shutdown(initcfg.FDStarter, unix.SHUT_WR); err != nil {
		return false, -1, fmt.Errorf("cannot reach the command's starter: %v", err)
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	for {
		n, oobn, _, _, err = unix.Recvmsg(initcfg.FDStarter, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		// The word that it runs, unread when its maps did not wait
		// for it (see Pending.Finish): the answer follows.
		if err == nil && n == 1 && buf[0] == readyByte && oobn == 0 {
			continue
		}
		break
	}
	unix.Close(initcfg.FDStarter)
	if err != nil || n != 1 || buf[0] != 'k' {
		// The starter said why on stderr, and exits.
		return true, -1, errors.New("the command's starter refused")
	}
	listener = -1
	if spec.Listener {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				listener = fds[0]
			}
		}
		if listener < 0 {
			return true, -1, errors.New("the command's starter sent no listener")
		}
	}
	return true, listener, nil
}

// Run is the starter: it becomes the command (see the package
// comment). Nothing it does is the command's yet: every refusal is the
// sandbox's (125).
func Run() int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "grok-sandbox: init: "+format+"\n", a...)
		return initcfg.ExitRefused
	}
	runtime.LockOSThread()
	// First, the word that this program runs (see Fork): its /proc files
	// are its own by now, and the init stage may write its maps.
	if _, err := unix.Write(3, []byte{readyByte}); err != nil {
		return fail("cannot reach the init stage: %v", err)
	}
	// The init stage's first run ignores what the launcher ignored for
	// bwrap (SIGINT, SIGQUIT), and an ignored signal stays ignored across
	// exec. The Go runtime puts its own handler on every signal but SIGHUP
	// and SIGINT when they come ignored (a handler is reset to the default
	// at exec): catching those two here makes every disposition the
	// default again at the exec, as the command must start with. Only
	// those two: enabling each signal costs a round trip to the runtime's
	// signal thread (about 1.5 ms for all of them).
	signal.Notify(make(chan os.Signal, 1), unix.SIGHUP, unix.SIGINT)
	// What it came with (CAP_SETPCAP, in its own namespace only) goes
	// first: the bounding set, the ambient set, every capability.
	if err := initproc.DropCapabilities(); err != nil {
		return fail("%v", err)
	}
	const ch = 3
	// The thread that answers is made now, before the filter goes on
	// this one, while the spec is on its way.
	answer := startAnswer(ch)
	data, err := initproc.ReadFD(ch)
	if err != nil {
		return fail("reading the command: %v", err)
	}
	var spec Spec
	if err := initcfg.Decode(data, &spec); err != nil || spec.Path == "" || len(spec.Args) == 0 {
		return fail("bad command from the init stage")
	}
	if err := initcfg.CheckIgnored(spec.Ignored); err != nil {
		return fail("%v", err)
	}
	if ids := [4]int{os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()}; ids != [4]int{spec.UID, spec.UID, spec.GID, spec.GID} {
		return fail("the command would run as uid %d/%d, gid %d/%d, not as you (%d, %d); refusing to start it", ids[0], ids[1], ids[2], ids[3], spec.UID, spec.GID)
	}
	listener := -1
	if len(spec.Filter) > 0 {
		prog, err := seccomp.Decode(spec.Filter)
		if err != nil {
			return fail("%v", err)
		}
		if spec.Listener {
			install := seccomp.InstallWithListener
			if spec.KillableRecv {
				install = seccomp.InstallWithKillableListener
			}
			listener, err = install(prog)
		} else {
			err = seccomp.Install(prog)
		}
		if err != nil {
			return fail("%v", err)
		}
	}
	if err := initproc.VerifyThread(spec.Filters, true); err != nil {
		return fail("%v; refusing to start the command", err)
	}
	if spec.Dir != "" {
		// By path, after the masks (see sandboxinit.Run).
		if err := unix.Chdir(spec.Dir); err != nil {
			return fail("cannot enter %s: %v", spec.Dir, err)
		}
	}
	var oob []byte
	if listener >= 0 {
		oob = unix.UnixRights(listener)
	}
	if err := answer(oob, spec.Filters); err != nil {
		return fail("cannot answer the init stage: %v", err)
	}
	if listener >= 0 {
		unix.Close(listener)
	}
	unix.Close(ch)
	if err := initproc.CloseFrom(3); err != nil {
		return fail("cannot close the launcher's descriptors: %v", err)
	}
	if err := reserveThreads(); err != nil {
		return fail("%v", err)
	}
	// Last, what the caller ignored (an ignored disposition outlives the
	// exec; the caught SIGHUP and SIGINT above become the default).
	if len(spec.Ignored) > 0 {
		signal.Ignore(initcfg.Signals(spec.Ignored)...)
	}
	err = syscall.Exec(spec.Path, spec.Args, spec.Env)
	return initproc.NotFound(spec.Args[0], &os.PathError{Op: "exec", Path: spec.Path, Err: err})
}

// startAnswer starts the thread that sends the init stage, on ch, the word
// that all is in place, with the listener in oob, and returns the call that
// hands it oob and waits. It is another thread of this process, locked
// before the caller installs the command's filter on its own: where that
// filter sends sendmsg to its supervisor (the children's sends, see
// childnet), the filtered thread's sendmsg would wait for the very
// supervisor the listener is for. (Made while the spec is on its way, not
// after the filter: a thread's start is on the launch's critical path.)
func startAnswer(ch int) func(oob []byte, filters int) error {
	type request struct {
		oob     []byte
		filters int
	}
	req := make(chan request)
	done := make(chan error, 1)
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		close(locked)
		r := <-req
		// A thread made since the filter went on may carry it; this
		// one must not (a thread the filtered one starts does).
		if n, err := initproc.ThreadFilters(); err != nil || n >= r.filters {
			done <- fmt.Errorf("no thread without the command's filter to answer from (%d filters, %v)", n, err)
			return
		}
		done <- unix.Sendmsg(ch, []byte{'k'}, r.oob, nil, 0)
	}()
	<-locked
	return func(oob []byte, filters int) error {
		req <- request{oob, filters}
		return <-done
	}
}

// nprocReserve is how many of your processes and threads the command and
// its children leave to the init stage: they count against one limit
// (RLIMIT_NPROC, per user), and a child that forks until it is reached
// would otherwise leave pid 1 no thread to start, which ends a Go program
// and the sandbox with it.
const nprocReserve = 256

// reserveThreads lowers the command's RLIMIT_NPROC, soft and hard, by
// nprocReserve (a quarter where the limit is smaller), so that the command
// and every process it starts stop short of the limit pid 1 needs room
// under. No limit (root's, or unlimited) stays as it is.
func reserveThreads() error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		return fmt.Errorf("cannot read RLIMIT_NPROC: %v", err)
	}
	if rl.Cur == unix.RLIM_INFINITY || rl.Cur == 0 {
		return nil
	}
	reserve := uint64(nprocReserve)
	if rl.Cur < 4*reserve {
		reserve = rl.Cur / 4
	}
	rl.Cur -= reserve
	if rl.Max > rl.Cur {
		rl.Max = rl.Cur
	}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		return fmt.Errorf("cannot lower RLIMIT_NPROC for the command: %v", err)
	}
	return nil
}
