//go:build linux

package seccomp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Install sets PR_SET_NO_NEW_PRIVS and installs prog with
// seccomp(SECCOMP_SET_MODE_FILTER, 0, ...) on the calling thread only (no
// TSYNC). The caller must have locked the goroutine to its OS thread
// (runtime.LockOSThread) and exec right after, so that the filter ends up on
// the exec'd program and its descendants.
func Install(prog []bpf.RawInstruction) error {
	_, err := install(prog, 0)
	return err
}

// InstallWithListener is Install with SECCOMP_FILTER_FLAG_NEW_LISTENER: it
// returns the notification fd (close-on-exec) that Supervise reads. The
// installing process normally hands the fd to its supervisor (SCM_RIGHTS)
// and closes its own copy before exec. Until a supervisor answers, a
// notified syscall blocks; once every copy of the fd is closed, notified
// syscalls fail with ENOSYS.
func InstallWithListener(prog []bpf.RawInstruction) (listener int, err error) {
	return install(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
}

// filterFlagWaitKillableRecv is SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
// (Linux 5.19): once the supervisor has received a notification, its
// caller waits for the answer through every signal but a fatal one.
const filterFlagWaitKillableRecv = 1 << 5

// InstallWithKillableListener is InstallWithListener where a received
// notification stays pending through the caller's signals (only its death
// ends it): a call the supervisor makes itself, such as a send, is then
// answered exactly once, never restarted after it was made. See
// KillableRecv; the supervisor must itself notice a signal its caller
// waits for while it blocks (PendingSignals).
func InstallWithKillableListener(prog []bpf.RawInstruction) (listener int, err error) {
	return install(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|filterFlagWaitKillableRecv)
}

// KillableRecv reports whether the kernel knows
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: asked with no program, a kernel
// that knows every flag given fails on the program's address (EFAULT),
// one that does not on the flags (EINVAL). Nothing is installed either way.
func KillableRecv() bool {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|filterFlagWaitKillableRecv, 0)
	return errno == unix.EFAULT
}

// ErrRestart is ERESTARTSYS as a notified call's answer: the kernel runs
// the caller's signal handler and makes the call again (SA_RESTART), or
// fails it with EINTR. Only for a caller with a signal to take: without
// one it would reach the program as errno 512.
const ErrRestart = unix.Errno(512)

// errRestartNoIntr is ERESTARTNOINTR as a notified call's answer: the
// kernel runs the caller's signal handler and makes the call again, never
// failing it with EINTR. Only for a caller with a signal to take, as
// ErrRestart.
const errRestartNoIntr = unix.Errno(513)

// SignalWatch is a look, repeated while a notified call waits for pid 1,
// at its caller's signals; a caller of a killable-only listener (see
// InstallWithKillableListener) takes none while it waits.
type SignalWatch struct {
	shared bool // a signal of the process's was pending at the last look
}

// Check says how a waiting call gives way to a signal of its caller's
// (thread tid), or 0 while it has none. A signal sent to the thread itself
// is its to take: ErrRestart. A signal sent to its process is the
// thread's only when it is the only thread that may take it: ErrRestart
// then too. Otherwise another thread may take it, and ErrRestart without
// a signal to take would reach the program as errno 512: the call goes on
// waiting while the signal is new, and fails with EINTR once it has waited
// past the next look (it sits on a thread that cannot take it: this one,
// or another waiting call).
func (w *SignalWatch) Check(tid int) unix.Errno {
	p := PendingSignals(tid)
	switch {
	case p.Unreadable:
		// Ending, or this process cannot open the file now: no
		// restart without a signal to take; the caller's end is seen
		// anyway.
		return 0
	case p.Thread:
		return ErrRestart
	case !p.Process:
		w.shared = false
		return 0
	case p.Threads == 1:
		return ErrRestart
	case w.shared:
		return unix.EINTR
	}
	w.shared = true
	return 0
}

// Pending says which signals wait for a thread (PendingSignals): ones it
// neither blocks nor ignores, sent to the thread itself (Thread) or to its
// process (Process, which any of its Threads that does not block it may
// take); Unreadable when its status cannot be read (it is ending).
type Pending struct {
	Thread, Process, Unreadable bool
	Threads                     int
}

// PendingSignals reads what signals wait for thread tid, blocked in a
// notified call (InstallWithKillableListener): a signal its handler would
// run for, or that would stop it, were it not waiting for the supervisor.
func PendingSignals(tid int) Pending {
	if tid <= 0 {
		return Pending{Unreadable: true}
	}
	// /proc/TID is the thread's own view: its SigPnd and SigBlk, and its
	// process's ShdPnd.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return Pending{Unreadable: true}
	}
	var pnd, shd, blk, ign uint64
	threads := 0
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		if string(k) == "Threads" {
			threads, _ = strconv.Atoi(string(v))
			continue
		}
		var dst *uint64
		switch string(k) {
		case "SigPnd":
			dst = &pnd
		case "ShdPnd":
			dst = &shd
		case "SigBlk":
			dst = &blk
		case "SigIgn":
			dst = &ign
		default:
			continue
		}
		x, err := strconv.ParseUint(string(v), 16, 64)
		if err != nil {
			return Pending{Unreadable: true}
		}
		*dst = x
	}
	return Pending{Thread: pnd&^blk&^ign != 0, Process: shd&^blk&^ign != 0, Threads: threads}
}

func install(prog []bpf.RawInstruction, flags uintptr) (int, error) {
	if len(prog) == 0 || len(prog) > 4096 {
		return -1, fmt.Errorf("seccomp: program length %d out of range", len(prog))
	}
	filters := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filters[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("seccomp: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filters)
	if errno != 0 {
		return -1, fmt.Errorf("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, %#x): %w", flags, errno)
	}
	if flags&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0 {
		return int(r), nil
	}
	return -1, nil
}

// Notification is one notified syscall.
type Notification struct {
	ID uint64
	// Pid is the *thread* id of the caller in the supervisor's pid
	// namespace (0 if the caller is not visible there).
	Pid  int
	Nr   int32
	Arch uint32
	Args [6]uint64
}

// struct seccomp_notif (80 bytes).
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

// struct seccomp_notif_resp (24 bytes).
type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

const userNotifFlagContinue = 1 // SECCOMP_USER_NOTIF_FLAG_CONTINUE

// The sizes are checked at compile time.
var (
	_ [80 - unsafe.Sizeof(seccompNotif{})]byte
	_ [unsafe.Sizeof(seccompNotif{}) - 80]byte
	_ [24 - unsafe.Sizeof(seccompNotifResp{})]byte
	_ [unsafe.Sizeof(seccompNotifResp{}) - 24]byte
)

// Tgid returns the thread group id (process id) of thread tid, read from
// /proc/<tid>/status. /proc must belong to the supervisor's pid namespace.
// The answer is only meaningful if the notification is still valid after
// the read (Supervise checks SECCOMP_IOCTL_NOTIF_ID_VALID after allow
// returns): a valid notification means tid was alive, hence not recycled,
// during the read. The file is read with plain system calls into a buffer
// on the stack, 512 bytes: Tgid is its fourth line, after Name (the
// thread's name, at most 15 bytes, each escaped in at most four), Umask
// and State. Notified calls wait for this.
func Tgid(tid int) (int, error) {
	if tid <= 0 {
		return 0, fmt.Errorf("seccomp: invalid tid %d", tid)
	}
	path := "/proc/" + strconv.Itoa(tid) + "/status"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var buf [512]byte
	n, err := unix.Read(fd, buf[:])
	for err == unix.EINTR {
		n, err = unix.Read(fd, buf[:])
	}
	unix.Close(fd)
	if err != nil {
		return 0, &os.PathError{Op: "read", Path: path, Err: err}
	}
	b := buf[:max(n, 0)]
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("Tgid:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, fmt.Errorf("seccomp: /proc/%d/status: bad Tgid %q", tid, v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("seccomp: /proc/%d/status: no Tgid", tid)
}

// InThreadGroup reports whether thread tid belongs to process pid, both as
// /proc's pid namespace numbers them: whether /proc/PID/task/TID exists,
// which the kernel finds only for the threads of pid's own group. One
// lookup, where Tgid has the kernel format a whole status file: it runs
// for every notified call of the command and its children. As with Tgid,
// the answer holds only if the notification is still valid afterwards,
// and only while pid is not reaped (a recycled pid would be asked).
func InThreadGroup(pid, tid int) bool {
	if pid <= 0 || tid <= 0 {
		return false
	}
	path := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid)
	var st unix.Stat_t
	for {
		err := unix.Fstatat(unix.AT_FDCWD, path, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// OwnProcessOnly answers a notified call whose argument arg names a
// thread (setpriority's who, under Rules.PriorityNotify): it goes on when
// that thread belongs to the caller's own process, fails with EPERM when
// it belongs to another (pid 1's, a helper's, a sibling's), and with
// ESRCH when there is none, as the kernel would. The caller is blocked in
// the call, so a target that is the caller itself cannot change; another
// thread of its own could end and its number be reused before the call
// goes on only after the pid space wrapped around.
func OwnProcessOnly(n Notification, r Reply, arg int) {
	who := int(int32(n.Args[arg]))
	caller, err := Tgid(n.Pid)
	if err != nil {
		_ = r.Return(0, unix.ESRCH) // the caller is gone
		return
	}
	target, err := Tgid(who)
	switch {
	case !r.Valid():
		return
	case err != nil:
		_ = r.Return(0, unix.ESRCH)
	case target != caller:
		_ = r.Return(0, unix.EPERM)
	default:
		_ = r.Continue()
	}
}

// AllowThreadGroup returns an allow function for Supervise that allows the
// threads of process pid (pid as seen in the supervisor's pid namespace).
//
// The caller must stop relying on it once pid has been reaped: a recycled
// pid would then be allowed. The supervisor is normally pid's parent, so pid
// cannot be recycled before the supervisor itself waits for it; stop
// supervising (or make allow return false) before reaping.
//
// tid is a pending caller's: a live thread, so a tid equal to pid is
// process pid's first thread (the ids of threads and processes are one
// space) and needs no lookup.
func AllowThreadGroup(pid int) func(tid int) bool {
	return func(tid int) bool { return pid > 0 && tid == pid || InThreadGroup(pid, tid) }
}

// SuperviseUntil answers the notifications of listener until no task uses
// the filter any more (returns nil), stop is closed (returns nil; the
// pending callers stay blocked until the listener is closed, then get
// ENOSYS), or an unexpected error.
//
// For each notification, allow gets the calling *thread* id (see Tgid and
// AllowThreadGroup). After allow returns, SuperviseUntil re-checks
// SECCOMP_IOCTL_NOTIF_ID_VALID before answering, so that a tid recycled
// while allow was reading /proc cannot be mistaken: if the notification is
// no longer valid, the caller is gone and nothing is answered. Allowed
// calls continue (SECCOMP_USER_NOTIF_FLAG_CONTINUE: safe because the
// decision depends only on who calls, never on pointer arguments); the
// others are passed to denied (if not nil), from a goroutine of their own
// (see Reply.OffLoop), while the caller is still blocked and its /proc entries
// can be read, and then fail with EACCES. The caller keeps ownership of
// listener.
func SuperviseUntil(listener int, stop <-chan struct{}, allow func(tid int) bool, denied func(n Notification)) error {
	return SuperviseChildren(listener, stop, allow, nil, denied, nil)
}

// Reply answers one notification. Every method may be called from any
// goroutine, once per notification (InstallFD answers it too).
type Reply struct {
	listener int
	id       uint64
	turn     *loopTurn
}

// loopTurn is one notification's turn of the supervisor's loop.
type loopTurn struct {
	mu     sync.Mutex
	ended  bool
	answer func()
}

// OffLoop has answer run where it cannot hold up the supervisor's loop,
// which answers the command's own calls too: anything that reads the
// caller's memory (process_vm_readv waits for the caller's memory map,
// which a child can keep busy for hundreds of milliseconds, forking from
// many threads with gigabytes mapped). Called while the loop hands r's
// notification over (from SuperviseChildren's child and observe), answer
// runs at once on the loop's own thread, and the loop goes on in a
// goroutine of its own: no thread has to wake up for answer, and an idle
// thread takes the loop up should answer block. When more notifications
// wait to be received, or when called later, answer runs in a goroutine
// of its own.
func (r Reply) OffLoop(answer func()) {
	if t := r.turn; t != nil {
		t.mu.Lock()
		mine := !t.ended && t.answer == nil
		if mine {
			t.answer = answer
		}
		t.mu.Unlock()
		if mine {
			return
		}
	}
	go answer()
}

// end ends the turn: what OffLoop was handed during it, or nil.
func (t *loopTurn) end() func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ended = true
	return t.answer
}

// DetachedReply is a Reply of no listener: every answer through it fails
// (EBADF). For tests of code that answers notifications.
func DetachedReply() Reply { return Reply{listener: -1} }

// Valid reports whether the notification is still pending: its caller is
// still blocked in the syscall, so its pid (and what was read of it since
// the notification arrived) still belongs to it.
func (r Reply) Valid() bool {
	return idValid(r.listener, r.id) == nil
}

// idValid asks whether notification id is still pending: nil when it is,
// ENOENT when it is not. The kernel takes the filter's lock with a wait
// that a signal of this thread's interrupts (EINTR): asked again, since
// that says nothing of the call.
func idValid(listener int, id uint64) error {
	for {
		var err error
		if hook := testHookIDValid.Load(); hook != nil {
			err = (*hook)()
		}
		if err == nil {
			err = ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
		}
		if err != unix.EINTR {
			return err
		}
	}
}

// testHookIDValid, when set, runs before each SECCOMP_IOCTL_NOTIF_ID_VALID;
// an error it returns stands for the ioctl's. Atomic, as testHookPolled.
var testHookIDValid atomic.Pointer[func() error]

// Return makes the syscall return val, or fail with errno when errno is
// not 0. A caller gone meanwhile is not an error.
func (r Reply) Return(val int64, errno unix.Errno) error {
	resp := seccompNotifResp{id: r.id, val: val}
	if errno != 0 {
		resp.val, resp.error = 0, -int32(errno)
	}
	return send(r.listener, &resp)
}

// Continue lets the syscall run as the caller made it. Only for decisions
// that no later change of the caller's memory or descriptors can subvert.
func (r Reply) Continue() error {
	return send(r.listener, &seccompNotifResp{id: r.id, flags: userNotifFlagContinue})
}

// struct seccomp_notif_addfd (24 bytes).
type seccompNotifAddfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

var (
	_ [24 - unsafe.Sizeof(seccompNotifAddfd{})]byte
	_ [unsafe.Sizeof(seccompNotifAddfd{}) - 24]byte
)

// InstallFD installs a copy of fd, this process's descriptor, in the
// caller and makes the syscall return its number, atomically
// (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND, Linux 5.14):
// the caller's socket() returns a socket this process made. It fails with
// EINVAL or ENOTTY where the kernel lacks the ioctl or the flag (the
// notification is then still pending, to be answered otherwise), with
// ENOENT when the caller is gone.
//
// The ioctl runs with every signal blocked on its thread: a signal that
// interrupts it after the kernel marked the notification answered, but
// before the caller took the descriptor, would make the kernel drop the
// descriptor and the caller's syscall return 0, and the restarted ioctl
// fail with EINPROGRESS.
func (r Reply) InstallFD(fd int, cloexec bool) (int, error) {
	a := seccompNotifAddfd{id: r.id, flags: unix.SECCOMP_ADDFD_FLAG_SEND, srcfd: uint32(fd)}
	if cloexec {
		a.newfdFlags = unix.O_CLOEXEC
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		return -1, err
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	for {
		n, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(r.listener), uintptr(unix.SECCOMP_IOCTL_NOTIF_ADDFD), uintptr(unsafe.Pointer(&a)))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(n), nil
	}
}

func send(listener int, resp *seccompNotifResp) error {
	for {
		err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(resp))
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil // ENOENT: the caller died or was interrupted meanwhile
		}
		if err != unix.EINTR {
			return fmt.Errorf("seccomp: SECCOMP_IOCTL_NOTIF_SEND: %w", err)
		}
	}
}

// SuperviseChildren is SuperviseUntil where a notification that allow
// refuses goes first to child (when not nil), off the loop (Reply.OffLoop),
// which may answer it itself through r, now or later from another
// goroutine, and then returns true;
// when it returns false the call is refused (denied, then EACCES) as
// SuperviseUntil does. A notification that observe (when not nil) claims,
// one of the file observer's syscalls (Rules.Observe), is answered by
// observe through r (Continue: it goes on whoever made it), now or later.
func SuperviseChildren(listener int, stop <-chan struct{}, allow func(tid int) bool, child func(n Notification, r Reply) bool, denied func(n Notification), observe func(n Notification, r Reply) bool) error {
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
	if stop != nil {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return fmt.Errorf("seccomp: pipe: %w", err)
		}
		defer unix.Close(p[0])
		done := make(chan struct{})
		defer close(done)
		go func() {
			defer unix.Close(p[1])
			select {
			case <-stop:
				unix.Write(p[1], []byte{0})
			case <-done:
			}
		}()
		fds = append(fds, unix.PollFd{Fd: int32(p[0]), Events: unix.POLLIN})
	}
	// The loop runs in one goroutine at a time: a turn that hands its
	// notification off (Reply.OffLoop) starts the next one's goroutine and
	// answers in its own, and so does a turn that takes too long (see
	// watchTurns).
	result := make(chan error, 1)
	report := func(err error) {
		select {
		case result <- err:
		default: // a turn left behind ended after the loop did
		}
	}
	var turns turnWatch
	var numbers uint64 // the turns' numbers, counted by the goroutine in charge
	var loop func()
	finished := make(chan struct{})
	defer close(finished)
	go turns.watch(finished, func() { go loop() })
	loop = func() {
		for {
			for i := range fds {
				fds[i].Revents = 0
			}
			if _, err := unix.Poll(fds, -1); err != nil {
				if err == unix.EINTR {
					continue
				}
				result <- fmt.Errorf("seccomp: poll: %w", err)
				return
			}
			if len(fds) > 1 && fds[1].Revents != 0 {
				result <- nil
				return
			}
			if hook := testHookPolled.Load(); hook != nil {
				(*hook)(&fds[0].Revents)
			}
			rev := fds[0].Revents
			if rev&unix.POLLNVAL != 0 {
				result <- fmt.Errorf("seccomp: listener fd %d is not open", listener)
				return
			}
			if rev&unix.POLLIN == 0 {
				if rev&unix.POLLHUP != 0 {
					result <- nil // no task uses the filter any more
					return
				}
				// POLLERR alone is no end: the kernel could not take
				// the filter's lock, its wait interrupted by a signal of
				// this thread's (which a child can send pid 1, while its
				// pending calls keep the lock busy). Poll again.
				continue
			}
			// POLLIN: a notification is pending, so RECV does not block (it
			// may fail with ENOENT if the caller went away meanwhile). The
			// turn is watched only once it holds its notification: a turn
			// left behind before its RECV would find the notification taken
			// by the loop that replaced it, and wait in RECV for the next.
			if testHookBeforeReceive != nil {
				testHookBeforeReceive()
			}
			n, ok, err := receive(listener)
			if err != nil {
				report(err)
				return
			}
			if !ok {
				continue
			}
			numbers++
			number := numbers
			turns.begin(number)
			var turn loopTurn
			err = handleOne(listener, n, &turn, allow, child, denied, observe)
			answer := turn.end()
			if !turns.end(number) {
				// Left behind: another goroutine runs the loop now, and
				// meets a lasting error itself; this turn's is dropped.
				if answer != nil {
					answer()
				}
				return
			}
			if err != nil {
				report(err)
				if answer != nil {
					go answer()
				}
				return
			}
			if answer != nil {
				if pending(listener) {
					// More calls wait to be received: receive them first,
					// each answer in a goroutine of its own. Handing the
					// loop over for each would let a child that floods
					// pid 1 from many threads keep the kernel's queue as
					// long as its threads, and a call of the command's
					// that a signal interrupts before it is received
					// starts again at the back of that queue.
					go answer()
					continue
				}
				go loop()
				answer()
				return
			}
		}
	}
	go loop()
	return <-result
}

// pending says whether a notification waits on listener to be received.
func pending(listener int) bool {
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&unix.POLLIN != 0
}

// turnWatch keeps the supervisor's loop from being held by one turn: the
// loop's turns do their work inline (a child's file call is checked
// there, reading the path from the child's memory, which a child can make
// wait for its memory map), and a turn still running at two ticks of the
// watch (2 to 4 ms) is left behind: another goroutine takes the loop up,
// and the turn ends its goroutine when it is done. The watch ticks only
// while turns are being run, and sleeps after a second without one.
type turnWatch struct {
	current atomic.Uint64 // the turn in progress, 0: none
	asleep  atomic.Bool
	wake    chan struct{}
	once    sync.Once
}

const turnTick = 2 * time.Millisecond

func (w *turnWatch) init() { w.wake = make(chan struct{}, 1) }

// begin marks turn number as in progress.
func (w *turnWatch) begin(number uint64) {
	w.current.Store(number)
	if w.asleep.Load() && w.asleep.CompareAndSwap(true, false) {
		w.once.Do(w.init)
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// end ends turn number; false when it was left behind.
func (w *turnWatch) end(number uint64) bool {
	return w.current.CompareAndSwap(number, 0)
}

// watch runs until finished is closed, calling restart to take the loop up
// again when a turn is left behind.
func (w *turnWatch) watch(finished <-chan struct{}, restart func()) {
	w.once.Do(w.init)
	var seen uint64
	quiet := 0
	for {
		select {
		case <-finished:
			return
		default:
		}
		time.Sleep(turnTick)
		cur := w.current.Load()
		if cur != 0 && cur == seen && w.current.CompareAndSwap(cur, 0) {
			restart()
			cur = 0
		}
		seen = cur
		if cur != 0 {
			quiet = 0
			continue
		}
		if quiet++; quiet < int(time.Second/turnTick) {
			continue
		}
		// Asleep until a turn begins (or already did).
		quiet = 0
		w.asleep.Store(true)
		if w.current.Load() != 0 {
			w.asleep.Store(false)
			continue
		}
		select {
		case <-w.wake:
		case <-finished:
			return
		}
	}
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

// testHookBeforeReceive, when set by a test, runs between the loop's poll
// and its RECV.
var testHookBeforeReceive func()

// testHookPolled, when set, sees (and may change) what poll said of the
// listener. Atomic: a turn left behind by an earlier test's supervisor may
// still run when a test sets it.
var testHookPolled atomic.Pointer[func(revents *int16)]

// receive takes the pending notification; false when its caller was
// interrupted or died meanwhile.
func receive(listener int) (Notification, bool, error) {
	for {
		var req seccompNotif // must be zeroed for NOTIF_RECV
		err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req))
		switch err {
		case nil:
			return Notification{ID: req.id, Pid: int(req.pid), Nr: req.nr, Arch: req.arch, Args: req.args}, true, nil
		case unix.EINTR:
			continue
		case unix.ENOENT:
			return Notification{}, false, nil
		}
		return Notification{}, false, fmt.Errorf("seccomp: SECCOMP_IOCTL_NOTIF_RECV: %w", err)
	}
}

func handleOne(listener int, n Notification, turn *loopTurn, allow func(int) bool, child func(Notification, Reply) bool, denied func(Notification), observe func(Notification, Reply) bool) error {
	if observe != nil && observe(n, Reply{listener: listener, id: n.ID, turn: turn}) {
		return nil
	}

	ok := n.Pid > 0 && allow != nil && allow(n.Pid)

	if err := idValid(listener, n.ID); err != nil {
		if err == unix.ENOENT {
			return nil // the caller is gone: its tid may have been recycled
		}
		return fmt.Errorf("seccomp: SECCOMP_IOCTL_NOTIF_ID_VALID: %w", err)
	}

	if !ok && n.Pid > 0 && (child != nil || denied != nil) {
		// Answered off this loop, which answers the command's own calls
		// too: a child's call is answered after reading the caller's
		// memory (an address, a message), and process_vm_readv waits for
		// the caller's memory map, which a child can keep busy for
		// hundreds of milliseconds (forking from many threads with
		// gigabytes mapped).
		r := Reply{listener: listener, id: n.ID, turn: turn}
		r.OffLoop(func() {
			// Answered here, or later by child itself: not a turn.
			r := r
			r.turn = nil
			if !childPlaces.Take(n.Pid, r) {
				return
			}
			defer childPlaces.Release()
			if child != nil && child(n, r) {
				return
			}
			// Before the answer: the caller is still blocked in the
			// syscall, so its /proc entries (its name) are still there
			// to read.
			if denied != nil {
				denied(n)
			}
			_ = r.Return(0, unix.EACCES)
		})
		return nil
	}
	resp := seccompNotifResp{id: n.ID}
	if ok {
		resp.flags = userNotifFlagContinue
	} else {
		resp.error = -int32(unix.EACCES)
		// Before the answer: the caller is still blocked in the syscall,
		// so its /proc entries (its name) are still there to read.
		if denied != nil {
			denied(n)
		}
	}
	return send(listener, &resp)
}

// Places bounds the notified calls answered off the loop at once, each
// on a goroutine (and, while it reads the caller's memory, a thread) of
// this process; the rest wait for a place, a goroutine for each blocked
// thread of the sandbox, and take their callers' signals meanwhile (see
// slotWatch).
type Places struct {
	tokens chan struct{}
	// observed: the calls are the observer's, which only look and let the
	// call go on; one whose caller has a signal to take is made again
	// rather than fail (see NewObserverPlaces).
	observed bool
}

// newPlaces makes n places for calls that are refused or made by pid 1: a
// caller with a signal to take while it waits has its call restart or
// fail with EINTR, as a blocking call would.
func newPlaces(n int) *Places { return &Places{tokens: make(chan struct{}, n)} }

// NewObserverPlaces makes n places for calls that pid 1 only looks at
// (Continue): a caller with a signal of its thread's to take has its call
// made again after the handler (and looked at then), so that a call the
// kernel would make without waiting (an open, a rename) never fails with
// EINTR for having waited for pid 1, nor goes on unlooked at.
func NewObserverPlaces(n int) *Places {
	return &Places{tokens: make(chan struct{}, n), observed: true}
}

// childCalls bounds the children's calls (their network, their refusals)
// answered off the loop at once.
const childCalls = 64

var childPlaces = newPlaces(childCalls)

// Take takes a place for the call r answers, made by thread tid; false
// when the call was answered meanwhile (its caller took a signal, see
// newPlaces and NewObserverPlaces) or is gone. A caller of a
// killable-only listener takes no signal while it waits; this wait must
// let it (see slotWatch). A place taken is given back with Release.
func (p *Places) Take(tid int, r Reply) bool {
	select {
	case p.tokens <- struct{}{}:
		return true
	default:
	}
	w := &slotWaiter{tid: tid, r: r, observed: p.observed, answered: make(chan struct{})}
	waiting.add(w)
	defer waiting.remove(w)
	select {
	case p.tokens <- struct{}{}:
		if w.take() {
			return true
		}
		<-p.tokens // answered by the watch at the same time
		return false
	case <-w.answered:
		return false
	}
}

// Release gives back a place Take took.
func (p *Places) Release() { <-p.tokens }

// slotWaiter is a call waiting for a place off the loop.
type slotWaiter struct {
	tid      int
	r        Reply
	sig      SignalWatch
	observed bool // an observer's call: made again rather than fail (NewObserverPlaces)

	mu       sync.Mutex
	done     bool          // it took a place, or the watch answered it
	answered chan struct{} // closed when the watch answered it
}

// take marks w as having a place; false when the watch answered it first.
func (w *slotWaiter) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return false
	}
	w.done = true
	return true
}

// slotWatch looks at the signals of the calls waiting for a place, on
// behalf of them all: every slotLook, at most slotLooks of them in turn
// (each look reads /proc/TID/status), so that a child that makes
// thousands of threads wait costs pid 1 a bounded share of a CPU; each
// waiting call is looked at every slotLook while there are slotLooks or
// fewer, less often beyond.
type slotWatch struct {
	mu      sync.Mutex
	waiters []*slotWaiter
	next    int
	running bool
}

const (
	slotLook  = 20 * time.Millisecond
	slotLooks = 16
)

var waiting slotWatch

func (s *slotWatch) add(w *slotWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiters = append(s.waiters, w)
	if !s.running {
		s.running = true
		go s.run()
	}
}

func (s *slotWatch) remove(w *slotWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.waiters {
		if x == w {
			// In order, the turn's place kept: moving the last waiter
			// into the gap could move it behind the turn, to be looked
			// at only a round later.
			last := len(s.waiters) - 1
			copy(s.waiters[i:], s.waiters[i+1:])
			s.waiters[last] = nil
			s.waiters = s.waiters[:last]
			if i < s.next {
				s.next--
			}
			return
		}
	}
}

// run looks until no call waits.
func (s *slotWatch) run() {
	var batch []*slotWaiter
	for {
		time.Sleep(slotLook)
		if batch = s.batch(batch[:0]); len(batch) == 0 {
			return
		}
		for _, w := range batch {
			w.look()
		}
	}
}

// batch appends to dst the next slotLooks waiting calls, in turn; none,
// and the watch marked stopped, when no call waits.
func (s *slotWatch) batch(dst []*slotWaiter) []*slotWaiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.waiters)
	if n == 0 {
		s.running = false
		return dst
	}
	for range min(n, slotLooks) {
		s.next %= n
		dst = append(dst, s.waiters[s.next])
		s.next++
	}
	return dst
}

// look answers w's call if its caller is gone or has a signal to take.
func (w *slotWaiter) look() {
	var e unix.Errno
	if w.r.Valid() {
		e = w.sig.Check(w.tid)
		if w.observed {
			// Never answered unlooked at: a signal of its thread's makes
			// the call run again after the handler, whatever SA_RESTART
			// says, and be looked at afresh; one of its process's that
			// another thread may take leaves it waiting.
			if e == ErrRestart {
				e = errRestartNoIntr
			} else {
				e = 0
			}
		}
		if e == 0 {
			return
		}
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.done = true
	w.mu.Unlock()
	if e != 0 {
		_ = w.r.Return(0, e)
	}
	close(w.answered)
}

// ObserveUntil hands every notification on listener to seen, which
// answers it through r (Continue: the syscall goes on), now or later from
// another goroutine, until stop is closed or no task uses the filter any
// more. It never refuses anything: the kernel decides.
func ObserveUntil(listener int, stop <-chan struct{}, seen func(n Notification, r Reply)) error {
	return SuperviseChildren(listener, stop, nil, nil, nil, func(n Notification, r Reply) bool {
		if n.Pid <= 0 {
			_ = r.Continue() // a caller outside this pid namespace: nothing to read
			return true
		}
		seen(n, r)
		return true
	})
}
