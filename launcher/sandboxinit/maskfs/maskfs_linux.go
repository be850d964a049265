package maskfs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/initproc"
	"grok-sandbox/launcher/sandboxinit/violations"
	"grok-sandbox/launcher/seccomp"
)

// ObserverArg runs the init stage as the mask observer.
const ObserverArg = "--mask-observer"

// maxReport bounds one report of the observer's (paths are at most a few
// PATH_MAX long; escaped, a control byte takes six): one longer is counted,
// not logged.
const maxReport = 64 << 10

// PidEnv carries the observer's pid across the init stage's
// re-exec (its environment is otherwise empty, and nothing in the sandbox
// can set it).
const PidEnv = "GROK_SANDBOX_MASK_OBSERVER"

// KillIfStopped kills the observer as soon as it is stopped (SIGSTOP and
// the like, from anything in the sandbox): a stopped observer would hold
// every process that touches a mask, pid 1's own checks included, until
// the kernel's request timeout. Killed, the masks fail at once (still
// refused) and its reader logs that observation stopped. It returns once
// the observer has stopped or exited, before pid 1 reaps it (WNOWAIT), so
// that its pid, once free again, is never waited on or killed.
func KillIfStopped(pid int) {
	const cldStopped = 5 // CLD_STOPPED
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err == nil && info.Code == cldStopped {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return
	}
}

// FUSE opcodes and flags this file system uses (linux/fuse.h).
const (
	fuseLookup      = 1
	fuseForget      = 2
	fuseGetattr     = 3
	fuseStatfs      = 17
	fuseInit        = 26
	fuseInterrupt   = 36
	fuseDestroy     = 38
	fuseBatchForget = 42

	fuseInitExt        = 1 << 30
	fuseRequestTimeout = 1 << 10 // FUSE_REQUEST_TIMEOUT (bit 42) in flags2

	fuseRootID = 1

	inHeaderLen  = 40
	outHeaderLen = 16
	attrLen      = 88
)

// observerTimeout is the request timeout, in seconds, that an observer
// process asks of the kernel: a helper that stops answering is cut off
// (every mask then fails with ENOTCONN) instead of holding the processes
// that touch a mask. pid 1 serving the masks itself asks for none: nothing
// can stop it, and a timeout would only let a process that starves it of
// CPU (a flood of touches) end the observation.
const observerTimeout = 2

// NodeName is the name of masks[i]'s node in the root directory of the
// masks' file system (nodeid i+2).
func NodeName(i int) string { return strconv.Itoa(i) }

// fuseServer serves the masks' nodes on dev.
type fuseServer struct {
	dev   int
	masks []policy.Mask
	// setup is the init stage's pid: its own lookups and checks are not
	// violations.
	setup int
	arch  seccomp.Arch
	send  func(violations.File)
	// timeout asks the kernel for observerTimeout (an observer process).
	timeout bool
	// touched runs at the first touch of a mask (nil: nothing to run).
	touched     func()
	touchedOnce sync.Once
	// log is the run's violation log where this server shares a process
	// with it (pid 1 serving the masks itself), once Watch has it; nil
	// otherwise. Past its cap a touch is only counted there.
	log *atomic.Pointer[violations.Log]
	// unsent takes the count of reports that could not be sent (nil:
	// none kept here): once only counting, the server hands it to the
	// log itself, since no report follows to carry it.
	unsent func() int
}

func (s *fuseServer) attr(node uint64) []byte {
	b := make([]byte, attrLen)
	le := binary.LittleEndian
	le.PutUint64(b[0:], node) // ino
	mode, nlink := uint32(unix.S_IFREG), uint32(1)
	if node == fuseRootID {
		mode, nlink = unix.S_IFDIR|0o500, 2
	} else if i := int(node) - 2; i >= 0 && i < len(s.masks) && s.masks[i].Dir {
		mode, nlink = unix.S_IFDIR, 2
	}
	le.PutUint32(b[60:], mode)
	le.PutUint32(b[64:], nlink)
	le.PutUint32(b[68:], uint32(os.Getuid()))
	le.PutUint32(b[72:], uint32(os.Getgid()))
	le.PutUint32(b[80:], 4096) // blksize
	return b
}

func (s *fuseServer) reply(unique uint64, errno unix.Errno, body []byte) {
	out := make([]byte, outHeaderLen+len(body))
	le := binary.LittleEndian
	le.PutUint32(out[0:], uint32(len(out)))
	le.PutUint32(out[4:], uint32(-int32(errno)))
	le.PutUint64(out[8:], unique)
	copy(out[outHeaderLen:], body)
	for {
		_, err := unix.Write(s.dev, out)
		if err != unix.EINTR {
			return // ENOENT: the request was interrupted meanwhile
		}
	}
}

// serve answers requests until the connection ends.
func (s *fuseServer) serve() {
	buf := make([]byte, 1<<17+4096)
	proc := make([]byte, 4096)
	le := binary.LittleEndian
	for {
		n, err := unix.Read(s.dev, buf)
		if err == unix.EINTR || err == unix.ENOENT || err == unix.EAGAIN {
			continue
		}
		if err != nil || n < inHeaderLen {
			return // ENODEV: unmounted, the sandbox is gone
		}
		req := buf[:n]
		op := le.Uint32(req[4:])
		unique := le.Uint64(req[8:])
		node := le.Uint64(req[16:])
		pid := int(le.Uint32(req[32:]))
		body := req[inHeaderLen:]
		switch op {
		case fuseInit:
			s.reply(unique, 0, s.initOut(body))
		case fuseLookup:
			name := strings.TrimRight(string(body), "\x00")
			i, err := strconv.Atoi(name)
			if node != fuseRootID || err != nil || i < 0 || i >= len(s.masks) || NodeName(i) != name {
				s.reply(unique, unix.ENOENT, nil)
				continue
			}
			e := make([]byte, 40)
			le.PutUint64(e[0:], uint64(i+2)) // nodeid; generation, entry and attr validity 0
			s.reply(unique, 0, append(e, s.attr(uint64(i+2))...))
		case fuseGetattr:
			// Reported before the answer: the caller's syscall is what it
			// is blocked in, and the report is queued to the init stage
			// before the caller can go on (and the sandbox end).
			if i := int(node) - 2; i >= 0 && i < len(s.masks) && pid > 0 && pid != s.setup {
				s.observe(pid, s.masks[i], proc)
			}
			a := make([]byte, 16) // attr_valid 0: the next touch asks again
			s.reply(unique, 0, append(a, s.attr(node)...))
		case fuseStatfs:
			s.reply(unique, 0, make([]byte, 80))
		case fuseForget, fuseBatchForget, fuseInterrupt:
			// No reply.
		case fuseDestroy:
			s.reply(unique, 0, nil)
			return
		default:
			// Nothing else can reach a node that the kernel's permission
			// check refuses everything; ENOSYS also stops the kernel
			// asking again (xattrs, say).
			s.reply(unique, unix.ENOSYS, nil)
		}
	}
}

func (s *fuseServer) initOut(in []byte) []byte {
	le := binary.LittleEndian
	out := make([]byte, 64)
	minor := uint32(0)
	var flags, flags2 uint32
	if len(in) >= 16 {
		minor = le.Uint32(in[4:])
		flags = le.Uint32(in[12:])
	}
	if len(in) >= 20 && flags&fuseInitExt != 0 {
		flags2 = le.Uint32(in[16:])
	}
	le.PutUint32(out[0:], 7)
	le.PutUint32(out[4:], minor)
	le.PutUint32(out[20:], 4096) // max_write
	le.PutUint32(out[24:], 1)    // time_gran
	if s.timeout && flags2&fuseRequestTimeout != 0 {
		le.PutUint32(out[12:], fuseInitExt)
		le.PutUint32(out[32:], fuseRequestTimeout)
		le.PutUint16(out[40:], observerTimeout)
	}
	if minor < 23 {
		return out[:24]
	}
	return out
}

// observe reports tid's touch of mask m, unless tid is a thread of the
// init stage (its own checks are not violations): the operation is the
// syscall tid is blocked in (it waits for this very answer). Two small
// reads of /proc into buf: this is on the caller's path.
//
// Once the log takes no more lines (its cap: a git status over a
// thousand committed masked files touches each of them three times), a
// touch is only counted for its summary: what a line would say is not
// read, and the caller waits for one lookup, not three reads of /proc.
func (s *fuseServer) observe(tid int, m policy.Mask, buf []byte) {
	if s.log != nil {
		if l := s.log.Load(); l != nil && l.Full() {
			// The init stage's own thread, exactly when its task
			// directory lists tid (a thread of the sandbox's that
			// reused the number is not listed there).
			var st unix.Stat_t
			if unix.Fstatat(unix.AT_FDCWD, "/proc/"+strconv.Itoa(s.setup)+"/task/"+strconv.Itoa(tid), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				return
			}
			if s.touched != nil {
				s.touchedOnce.Do(s.touched)
			}
			n := 1
			if s.unsent != nil {
				n += s.unsent()
			}
			l.Lost(n)
			return
		}
	}
	dir := "/proc/" + strconv.Itoa(tid)
	comm, tgid := "?", -1
	for _, line := range strings.SplitN(readProc(dir+"/status", buf), "\n", 8) {
		if v, ok := strings.CutPrefix(line, "Name:"); ok {
			comm = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			tgid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if tgid == s.setup {
		return
	}
	if s.touched != nil {
		s.touchedOnce.Do(s.touched)
	}
	op := "access"
	if line := readProc(dir+"/syscall", buf); line != "" {
		op = syscallOp(s.arch, line, m.Dir)
	}
	s.send(violations.File{Comm: comm, Exe: violations.ExeOf(dir), Op: op, Path: m.Path, Entry: m.Entry, Source: m.Source})
}

// readProc reads a small /proc file into buf ("" when it cannot).
func readProc(path string, buf []byte) string {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

// syscallOp names the operation of a /proc/PID/syscall line ("NR ARG0 ...
// ARG5 SP PC", in hex but NR).
func syscallOp(arch seccomp.Arch, line string, dir bool) string {
	f := strings.Fields(line)
	if len(f) < 4 {
		return "access"
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return "access"
	}
	arg := func(i int) uint64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		return v
	}
	name := seccomp.SyscallName(arch, int32(nr))
	switch name {
	case "open", "openat", "creat", "openat2":
		flags := uint64(0)
		switch name {
		case "open":
			flags = arg(1)
		case "openat":
			flags = arg(2)
		case "creat":
			flags = unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
		}
		switch {
		case flags&(unix.O_WRONLY|unix.O_RDWR) != 0 && flags&unix.O_TRUNC != 0:
			return "truncate"
		case flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC) != 0:
			return "write"
		case flags&unix.O_DIRECTORY != 0 || dir:
			return "list"
		}
		return "open"
	case "execve", "execveat", "uselib":
		return "exec"
	case "truncate":
		return "truncate"
	case "chdir", "fchdir":
		return "list"
	case "rename", "renameat", "renameat2":
		return "rename"
	case "link", "linkat", "symlink", "symlinkat":
		return "link"
	case "unlink", "unlinkat", "rmdir":
		return "remove"
	case "mkdir", "mkdirat", "mknod", "mknodat":
		return "create"
	case "chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat", "utimes", "utimensat", "futimesat", "utime",
		"setxattr", "lsetxattr", "removexattr", "lremovexattr":
		return "change"
	}
	return "stat" // stat, lstat, newfstatat, statx, access, faccessat, readlink, getxattr, ...
}

// Start reopens the /dev/fuse the launcher handed over (the
// connection must be opened in this user namespace), mounts the masks'
// file system read-only on mnt and serves it: from goroutines of this
// process where it goes on after its privileged steps (initproc.DropsInPlace;
// the pid returned is 0), else from an observer process, started with
// every capability dropped. The reports' channel ends on
// initcfg.FDObserver, which outlives the init stage's re-exec.
func Start(mnt string, masks []policy.Mask) (int, error) {
	dev, err := unix.Open("/proc/self/fd/"+strconv.Itoa(initcfg.FDFuse), unix.O_RDWR|unix.O_CLOEXEC, 0)
	unix.Close(initcfg.FDFuse)
	if err != nil {
		return 0, fmt.Errorf("opening /dev/fuse: %v", err)
	}
	// The mount names the descriptor by number: it must stay open until
	// then (fuseFile's deferred Close).
	// The descriptors the observer gets are closed here through their
	// os.File only (never also by number: a finalizer would close the
	// number again, whatever it names by then).
	fuseFile := os.NewFile(uintptr(dev), "fuse")
	defer fuseFile.Close()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socketpair: %v", err)
	}
	theirs := os.NewFile(uintptr(sp[1]), "observer")
	defer theirs.Close()
	// Mounted first: the connection is the descriptor's only once it is
	// mounted (a read before that fails with EPERM). Until the observer
	// answers, nothing waits on it but this process's own lookups.
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,default_permissions,allow_other", dev, os.Getuid(), os.Getgid())
	// Not noexec: the kernel would refuse an exec at the mount, before
	// the node is asked, and it would go unseen. Mode 0000 refuses it
	// all the same (an exec needs an execute bit, whatever the caller's
	// capabilities), and nosuid stays.
	if err := unix.Mount("grok-sandbox-masks", mnt, "fuse", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(sp[0])
		return 0, fmt.Errorf("mounting the masks' file system: %v", err)
	}
	fail := func(format string, a ...any) (int, error) {
		// No server: detach the mount, and closing the last descriptor
		// (deferred) aborts the connection.
		unix.Close(sp[0])
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		return 0, fmt.Errorf(format, a...)
	}
	if initproc.DropsInPlace {
		// This process goes on to supervise the command, goroutines and
		// all: it serves the file system itself, no program to start,
		// from two goroutines (which answer its own lookups of the
		// nodes too: mountMasks binds them just after this). The
		// connection and the reports' sending end stay open here,
		// close-on-exec, for the rest of the run (Kept).
		arch, err := seccomp.HostArch()
		if err != nil {
			return fail("%v", err)
		}
		conn, err := unix.FcntlInt(uintptr(dev), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return fail("keeping the FUSE connection: %v", err)
		}
		ch, err := unix.FcntlInt(uintptr(sp[1]), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			unix.Close(conn)
			return fail("keeping the observer's channel: %v", err)
		}
		if err := initproc.PlaceFD(sp[0], initcfg.FDObserver); err != nil {
			unix.Close(conn)
			unix.Close(ch)
			_ = unix.Unmount(mnt, unix.MNT_DETACH)
			return 0, err
		}
		observerPlaced = true
		keptFDs = []int{conn, ch}
		out := newSender(ch)
		s := &fuseServer{dev: conn, masks: masks, setup: os.Getpid(), arch: arch, send: out.send, log: &inProcessLog, unsent: out.takeLost}
		serveInProcess(s, out)
		return 0, nil
	}
	data, err := json.Marshal(masks)
	if err != nil {
		return fail("%v", err)
	}
	cfg, err := memfdWith("grok-sandbox-masks", data)
	if err != nil {
		return fail("%v", err)
	}
	cfgFile := os.NewFile(uintptr(cfg), "masks")
	defer cfgFile.Close()
	errc := make(chan error, 1)
	pid := 0
	go func() {
		// Never unlocked: the thread that dropped the capabilities ends
		// with the goroutine.
		runtime.LockOSThread()
		errc <- func() error {
			if err := initproc.DropCapabilities(); err != nil {
				return err
			}
			cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"grok-sandbox", initcfg.Command, ObserverArg, strconv.Itoa(os.Getpid())},
				Env: []string{}, Stderr: os.Stderr, ExtraFiles: []*os.File{fuseFile, theirs, cfgFile}}
			err := initproc.StartClean(cmd)
			if err == nil {
				pid = cmd.Process.Pid
			}
			return err
		}()
	}()
	if err := <-errc; err != nil {
		return fail("starting the observer: %v", err)
	}
	if err := initproc.PlaceFD(sp[0], initcfg.FDObserver); err != nil {
		return 0, err
	}
	observerPlaced = true
	return pid, nil
}

// observerPlaced: initcfg.FDObserver is the observer's channel (Start put
// it there, or AdoptObserver found it at the start of the init stage's
// re-exec). Only then: otherwise a descriptor of the init stage's own may
// have taken the number.
var observerPlaced bool

// AdoptObserver tells the init stage's re-exec that it began with the
// observer's channel on initcfg.FDObserver.
func AdoptObserver() { observerPlaced = true }

// ObserverPlaced reports whether initcfg.FDObserver is the observer's
// channel.
func ObserverPlaced() bool { return observerPlaced }

// memfdWith is a sealed-by-use memfd holding data, rewound.
func memfdWith(name string, data []byte) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %v", err)
	}
	if _, err := unix.Write(fd, data); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// RunObserver is the observer process: fd 3 is the FUSE connection, fd 4
// its channel to the init stage, fd 5 the masks; setup is the init
// stage's pid.
func RunObserver(args []string) int {
	initproc.ShrugSignals()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "grok-sandbox: mask observer: "+format+"\n", a...)
		return initcfg.ExitRefused
	}
	if len(args) != 2 {
		return fail("usage")
	}
	setup, err := strconv.Atoi(args[1])
	if err != nil {
		return fail("bad pid %q", args[1])
	}
	if err := initproc.VerifyThread(1, true); err != nil {
		return fail("%v", err)
	}
	const dev, ch, cfg = 3, 4, 5
	for _, fd := range []int{dev, ch, cfg} {
		unix.CloseOnExec(fd)
	}
	data, err := initproc.ReadFD(cfg)
	unix.Close(cfg)
	if err != nil {
		return fail("reading the masks: %v", err)
	}
	var masks []policy.Mask
	if err := json.Unmarshal(data, &masks); err != nil {
		return fail("bad masks: %v", err)
	}
	arch, err := seccomp.HostArch()
	if err != nil {
		return fail("%v", err)
	}
	s := &fuseServer{dev: dev, masks: masks, setup: setup, arch: arch, send: newSender(ch).send, timeout: true}
	// Two readers: callers that touch masks from several threads at once
	// (git's parallel lstat) are answered in parallel.
	done := make(chan struct{}, 2)
	for range 2 {
		go func() { s.serve(); done <- struct{}{} }()
	}
	<-done
	return 0
}

// inProcessLog is the run's violation log, for the observer served from
// this process (Watch sets it).
var inProcessLog atomic.Pointer[violations.Log]

// keptFDs are the descriptors an in-process observer keeps open (see
// Kept).
var keptFDs []int

// Kept is the descriptors the observer Start began in this process keeps
// open for the rest of the run (the FUSE connection, the reports' sending
// end), close-on-exec: the init stage's descriptor check lets exactly
// these through. None where the observer is a process of its own.
func Kept() []int { return keptFDs }

// serveInProcess serves s from two goroutines of this process; once both
// have returned (the connection ended while the run goes on: the kernel
// aborted it, say) it closes out, so that Watch sees the end and the log
// says that observation stopped, as it does when an observer process is
// gone.
//
// At the first touch of a mask, pid 1 gets two more Go processors (Ps)
// than it had: then a flood of touches is shared out by the kernel's
// scheduler, as an observer process's would be, and does not hold back
// the supervisor's answers (the two goroutines would otherwise take its
// Ps). Not before: changing them stops the world, and most runs touch no
// mask.
func serveInProcess(s *fuseServer, out *sender) {
	s.touched = func() { runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 2) }
	var left atomic.Int32
	left.Store(2)
	for range 2 {
		go func() {
			s.serve()
			if left.Add(-1) == 0 {
				out.close()
			}
		}()
	}
}

// sender sends the observer's reports, one JSON line each, on ch to the
// init stage's Watch.
type sender struct {
	mu     sync.Mutex
	ch     int
	lost   int
	closed bool
}

func newSender(ch int) *sender { return &sender{ch: ch} }

// close closes the channel: Watch reads what was sent, then the end.
// Reports after it are lost.
func (o *sender) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		unix.Close(o.ch)
	}
}

// takeLost returns how many reports could not be sent since the last one
// that was (each carries that count), and forgets them: the caller counts
// them itself.
func (o *sender) takeLost() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.lost
	o.lost = 0
	return n
}

// send sends one report, waiting a little where the channel is full.
func (o *sender) send(v violations.File) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	v.Lost = o.lost
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a path of & is not six times as long
	err := enc.Encode(v)
	if err == nil && b.Len() > maxReport {
		err = errors.New("report too long")
	}
	if err == nil {
		// A full channel (pid 1 behind on a loaded machine) waits a
		// little rather than lose the report: this is on the caller's
		// path, but a lost line is a lost violation.
		for tries := 0; ; tries++ {
			err = unix.Send(o.ch, []byte(b.String()), unix.MSG_DONTWAIT)
			if err != unix.EAGAIN || tries == 50 {
				break
			}
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(o.ch), Events: unix.POLLOUT}}, 20)
		}
	}
	if err != nil {
		o.lost++
		return
	}
	o.lost = 0
}

// Reports is the init stage's end of the observer's channel.
type Reports struct {
	done chan struct{}
}

// Watch logs what the observer reports on fd into v until the
// observer is gone, or stop is closed and what it sent is read (stop shuts
// the reading side down: what is queued is still read, then the end); when
// the observer is gone before, it says so in the log.
func Watch(fd int, v *violations.Log, stop <-chan struct{}) *Reports {
	if keptFDs != nil {
		inProcessLog.Store(v)
	}
	r := &Reports{done: make(chan struct{})}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-stop:
			close(stopped)
			_ = unix.Shutdown(fd, unix.SHUT_RD)
		case <-r.done:
		}
	}()
	go func() {
		defer close(r.done)
		buf := make([]byte, maxReport+1)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				select {
				case <-stopped:
				default:
					v.Notice("the file violation observer is gone: touches of denied paths are no longer logged in this run (they are still refused)")
				}
				return
			}
			var fv violations.File
			if n > maxReport || json.Unmarshal(buf[:n], &fv) != nil {
				v.Lost(1) // counted in the summary all the same
				continue
			}
			v.Lost(fv.Lost)
			v.LogFile(fv)
		}
	}()
	return r
}

// Wait waits for the reports already sent to be read. Once stop has shut
// the reading side down, every read returns at once (what is queued, then
// the end) and the observer can queue nothing more, so this is short; the
// bound is only a safety net, far above what a loaded machine takes (a
// bound of one second lost a report queued before the command exited).
func (r *Reports) Wait() {
	select {
	case <-r.done:
	case <-time.After(violations.DrainWait):
	}
}
