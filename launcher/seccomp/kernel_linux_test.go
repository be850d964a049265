//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The real-kernel tests re-exec the test binary with helperEnv set, so that
// no filter is ever installed on the test process itself.
const helperEnv = "GROK_SECCOMP_TEST_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		os.Exit(m.Run())
	case "deny":
		helperDeny()
	case "notify":
		helperNotify()
	case "notify-child":
		helperNotifyChild()
	case "offloop":
		helperOffLoop()
	case "offloop-child":
		helperOffLoopChild()
	case "one-call":
		helperOneCall()
	case "slot-signal":
		helperSlotSignal()
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// TestSyscallTableMatchesXSys checks the builder's table for the host arch
// against golang.org/x/sys/unix.
func TestSyscallTableMatchesXSys(t *testing.T) {
	arch, err := HostArch()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"read": unix.SYS_READ, "write": unix.SYS_WRITE, "openat": unix.SYS_OPENAT,
		"ioctl": unix.SYS_IOCTL, "socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR, "setsockopt": unix.SYS_SETSOCKOPT,
		"connect": unix.SYS_CONNECT, "sendto": unix.SYS_SENDTO, "sendmsg": unix.SYS_SENDMSG,
		"sendmmsg": unix.SYS_SENDMMSG, "ptrace": unix.SYS_PTRACE,
		"process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"pidfd_getfd": unix.SYS_PIDFD_GETFD, "io_uring_setup": unix.SYS_IO_URING_SETUP,
		"io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
		"clone": unix.SYS_CLONE, "unshare": unix.SYS_UNSHARE, "clone3": unix.SYS_CLONE3,
		"prlimit64": unix.SYS_PRLIMIT64, "sched_setaffinity": unix.SYS_SCHED_SETAFFINITY,
		"sched_setscheduler": unix.SYS_SCHED_SETSCHEDULER, "sched_setparam": unix.SYS_SCHED_SETPARAM,
		"sched_setattr": unix.SYS_SCHED_SETATTR, "setpriority": unix.SYS_SETPRIORITY, "ioprio_set": unix.SYS_IOPRIO_SET,
		"rt_sigqueueinfo": unix.SYS_RT_SIGQUEUEINFO, "rt_tgsigqueueinfo": unix.SYS_RT_TGSIGQUEUEINFO,
		"pidfd_send_signal": unix.SYS_PIDFD_SEND_SIGNAL, "fcntl": unix.SYS_FCNTL,
		"add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY, "keyctl": unix.SYS_KEYCTL,
		"bind": unix.SYS_BIND, "listen": unix.SYS_LISTEN,
		"setuid": unix.SYS_SETUID, "setgid": unix.SYS_SETGID, "setreuid": unix.SYS_SETREUID,
		"setregid": unix.SYS_SETREGID, "setresuid": unix.SYS_SETRESUID, "setresgid": unix.SYS_SETRESGID,
		"fchown": unix.SYS_FCHOWN,
		"fchmod": unix.SYS_FCHMOD, "mknodat": unix.SYS_MKNODAT,
		"fchmodat": unix.SYS_FCHMODAT, "openat2": unix.SYS_OPENAT2, "fchmodat2": unix.SYS_FCHMODAT2,
		// The file observer's (BuildObserver's syscalls and its reports).
		"execve": unix.SYS_EXECVE, "truncate": unix.SYS_TRUNCATE, "chdir": unix.SYS_CHDIR,
		"getxattr": unix.SYS_GETXATTR, "lgetxattr": unix.SYS_LGETXATTR, "listxattr": unix.SYS_LISTXATTR,
		"llistxattr": unix.SYS_LLISTXATTR, "mkdirat": unix.SYS_MKDIRAT, "fchownat": unix.SYS_FCHOWNAT,
		"newfstatat": unix.SYS_NEWFSTATAT, "unlinkat": unix.SYS_UNLINKAT, "renameat": unix.SYS_RENAMEAT,
		"linkat": unix.SYS_LINKAT, "symlinkat": unix.SYS_SYMLINKAT, "readlinkat": unix.SYS_READLINKAT,
		"faccessat": unix.SYS_FACCESSAT, "utimensat": unix.SYS_UTIMENSAT, "renameat2": unix.SYS_RENAMEAT2,
		"execveat": unix.SYS_EXECVEAT, "fchdir": unix.SYS_FCHDIR, "userfaultfd": unix.SYS_USERFAULTFD, "statx": unix.SYS_STATX, "faccessat2": unix.SYS_FACCESSAT2,
	}
	// The syscalls only some architectures have (arm64 has only the *at
	// forms of open, stat, rename and the rest): legacySyscalls, per arch.
	for name, nr := range legacySyscalls {
		want[name] = nr
	}
	tab := tables[arch].nr
	if len(tab) != len(want) {
		t.Errorf("table has %d entries, x/sys check has %d", len(tab), len(want))
	}
	for name, nr := range want {
		if got, ok := tab[name]; !ok || int(got) != nr {
			t.Errorf("%s: %s = %d (present %v), x/sys says %d", arch, name, got, ok, nr)
		}
	}
	consts := []struct {
		name      string
		got, want uint64
	}{
		{"AUDIT_ARCH", uint64(tables[arch].auditArch), uint64(map[Arch]uint32{ArchAMD64: unix.AUDIT_ARCH_X86_64, ArchARM64: unix.AUDIT_ARCH_AARCH64}[arch])},
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"SOCK_STREAM", sockStream, unix.SOCK_STREAM},
		{"SOCK_SEQPACKET", sockSeqpacket, unix.SOCK_SEQPACKET},
		{"EPERM", errnoEPERM, uint64(unix.EPERM)},
		{"EACCES", errnoEACCES, uint64(unix.EACCES)},
		{"RET_ALLOW", uint64(RetAllow), unix.SECCOMP_RET_ALLOW},
		{"RET_ERRNO", uint64(RetErrno), unix.SECCOMP_RET_ERRNO},
		{"RET_USER_NOTIF", uint64(RetUserNotif), unix.SECCOMP_RET_USER_NOTIF},
		{"RET_KILL_PROCESS", uint64(RetKillProcess), unix.SECCOMP_RET_KILL_PROCESS},
		{"NOTIF_ID_VALID", 0x40082102, unix.SECCOMP_IOCTL_NOTIF_ID_VALID},
		{"NOTIF_RECV", 0xc0502100, unix.SECCOMP_IOCTL_NOTIF_RECV},
		{"NOTIF_SEND", 0xc0182101, unix.SECCOMP_IOCTL_NOTIF_SEND},
		{"FLAG_CONTINUE", userNotifFlagContinue, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE},
	}
	for _, c := range consts {
		if c.got != c.want {
			t.Errorf("%s = %#x, x/sys says %#x", c.name, c.got, c.want)
		}
	}
}

func TestTgid(t *testing.T) {
	tgid, err := Tgid(unix.Gettid())
	if err != nil || tgid != os.Getpid() {
		t.Errorf("Tgid(gettid) = %d, %v; want %d", tgid, err, os.Getpid())
	}
	if _, err := Tgid(0); err == nil {
		t.Error("Tgid(0): no error")
	}
}

func TestInThreadGroup(t *testing.T) {
	other := make(chan int)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		other <- unix.Gettid()
		<-release
		runtime.UnlockOSThread()
	}()
	defer close(release)
	tid := <-other
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	for _, c := range []struct {
		pid, tid int
		want     bool
	}{
		{os.Getpid(), unix.Gettid(), true},
		{os.Getpid(), tid, true},
		{os.Getpid(), child.Process.Pid, false},
		{child.Process.Pid, child.Process.Pid, true},
		{child.Process.Pid, tid, false},
		{0, tid, false},
		{os.Getpid(), 0, false},
	} {
		if got := InThreadGroup(c.pid, c.tid); got != c.want {
			t.Errorf("InThreadGroup(%d, %d) = %v, want %v", c.pid, c.tid, got, c.want)
		}
	}
}

// ---- helpers (run in re-executed subprocesses) ----

type results map[string]string

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

func sysErr(errno unix.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

func emit(who string, r results) {
	b, _ := json.Marshal(r)
	fmt.Printf("RESULT %s %s\n", who, b)
}

func fatalHelper(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "helper: "+format+"\n", args...)
	os.Exit(3)
}

// probe runs the syscalls the deny test looks at; prefix is "before." or
// "after.".
func probe(r results, prefix string) {
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		r[prefix+"socket_inet"] = "ok"
	} else {
		r[prefix+"socket_inet"] = errName(err)
	}
	if fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		r[prefix+"socket_inet6"] = "ok"
	} else {
		r[prefix+"socket_inet6"] = errName(err)
	}
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		// connect to a path that does not exist: ENOENT without the
		// filter, EACCES with it.
		r[prefix+"connect_unix"] = errName(unix.Connect(fd, &unix.SockaddrUnix{Name: "/nonexistent/grok-seccomp.sock"}))
		unix.Close(fd)
		r[prefix+"socket_unix_stream"] = "ok"
	} else {
		r[prefix+"socket_unix_stream"] = errName(err)
	}
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	r[prefix+"socketpair_unix_stream"] = errName(err)
	if err == nil {
		r[prefix+"sendto_null"] = errName(unix.Sendto(sp[0], []byte{1}, 0, nil))
		// With an address on a connected stream socket: EISCONN without
		// the filter, EACCES with it.
		r[prefix+"sendto_addr"] = errName(unix.Sendto(sp[0], []byte{1}, 0, &unix.SockaddrUnix{Name: "/nonexistent/x"}))
		unix.Close(sp[0])
		unix.Close(sp[1])
	}
	if sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		unix.Close(sp[0])
		unix.Close(sp[1])
		r[prefix+"socketpair_unix_dgram"] = "ok"
	} else {
		r[prefix+"socketpair_unix_dgram"] = errName(err)
	}
	// io_uring_setup(1, NULL): EFAULT when io_uring is usable.
	_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
	r[prefix+"io_uring_setup"] = errName(sysErr(e))

	ptm, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		r[prefix+"ptmx"] = errName(err)
		return
	}
	defer unix.Close(ptm)
	c := byte('#')
	_, _, e = unix.Syscall(unix.SYS_IOCTL, uintptr(ptm), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	r[prefix+"tiocsti"] = errName(sysErr(e))
	_, _, e = unix.Syscall(unix.SYS_IOCTL, uintptr(ptm), uintptr(unix.TIOCSTI)|1<<32, uintptr(unsafe.Pointer(&c)))
	r[prefix+"tiocsti_hi"] = errName(sysErr(e))
	sub := byte(0)
	_, _, e = unix.Syscall(unix.SYS_IOCTL, uintptr(ptm), unix.TIOCLINUX, uintptr(unsafe.Pointer(&sub)))
	r[prefix+"tioclinux"] = errName(sysErr(e))
	_, err = unix.IoctlGetWinsize(ptm, unix.TIOCGWINSZ)
	r[prefix+"tiocgwinsz"] = errName(err)
}

func helperDeny() {
	runtime.LockOSThread()
	arch, err := HostArch()
	if err != nil {
		fatalHelper("%v", err)
	}
	prog, err := Build(Rules{BlockTerminalInjection: true, Network: NetworkDeny}, arch)
	if err != nil {
		fatalHelper("%v", err)
	}
	r := results{}
	probe(r, "before.")
	r["install"] = errName(Install(prog))
	probe(r, "after.")
	emit("deny", r)
}

// sendListener installs a filter of rules with a listener on the calling
// thread (locked to it), and sends the listener over fd 3.
func sendListener(rules Rules) {
	runtime.LockOSThread()
	arch, err := HostArch()
	if err != nil {
		fatalHelper("%v", err)
	}
	prog, err := Build(rules, arch)
	if err != nil {
		fatalHelper("%v", err)
	}
	lfd, err := InstallWithListener(prog)
	if err != nil {
		fatalHelper("InstallWithListener: %v", err)
	}
	if err := unix.Sendmsg(3, []byte{'L'}, unix.UnixRights(lfd), nil, 0); err != nil {
		fatalHelper("sending the listener: %v", err)
	}
	unix.Close(lfd)
}

// helperNotify is process S, the "wrapped command": fd 3 is a stream
// socket to the test process, which supervises.
func helperNotify() {
	sendListener(Rules{BlockTerminalInjection: true, Network: NetworkNotify})
	unix.Close(3)

	r := results{"pid": fmt.Sprint(os.Getpid()), "tid": fmt.Sprint(unix.Gettid())}
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		r["socket_inet"] = "ok"
	} else {
		r["socket_inet"] = errName(err)
	}
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		// Allowed through with CONTINUE: the kernel really runs it.
		r["connect_unix"] = errName(unix.Connect(fd, &unix.SockaddrUnix{Name: "/nonexistent/grok-seccomp.sock"}))
		unix.Close(fd)
	}
	_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
	r["io_uring_setup"] = errName(sysErr(e))

	// The child is forked from this (filtered, locked) thread.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=notify-child")
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	r["child"] = errName(cmd.Run())
	emit("S", r)
}

// helperNotifyChild is process C, started by S.
func helperNotifyChild() {
	runtime.LockOSThread()
	r := results{"pid": fmt.Sprint(os.Getpid()), "tid": fmt.Sprint(unix.Gettid())}
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		r["socket_inet"] = "ok"
	} else {
		r["socket_inet"] = errName(err)
	}
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	r["socketpair_unix_stream"] = errName(err)
	if err == nil {
		unix.Close(sp[0])
		unix.Close(sp[1])
	}
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		r["connect_unix"] = errName(unix.Connect(fd, &unix.SockaddrUnix{Name: "/nonexistent/grok-seccomp.sock"}))
		unix.Close(fd)
	}
	emit("C", r)
}

// helperOffLoop is the command of TestKernelChildAnswersOffLoop: it starts
// a child, waits for the test's word that the child's call is being
// answered (and held), then makes a call of its own and says when it
// returned.
func helperOffLoop() {
	sendListener(Rules{Network: NetworkNotify})
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), helperEnv+"=offloop-child")
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		fatalHelper("starting the child: %v", err)
	}
	var b [1]byte
	if n, err := unix.Read(3, b[:]); n != 1 || err != nil || b[0] != 'G' {
		fatalHelper("waiting for the word: %d %v", n, err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fatalHelper("the command's own socket: %v", err)
	}
	unix.Close(fd)
	if _, err := unix.Write(3, []byte{'D'}); err != nil {
		fatalHelper("saying done: %v", err)
	}
	_ = child.Wait()
}

// helperOffLoopChild makes one call that the supervisor sends to its child
// handler.
func helperOffLoopChild() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
}

// helperOneCall makes one notified call of its own, says so, and exits
// when the test says.
func helperOneCall() {
	sendListener(Rules{Network: NetworkNotify})
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fatalHelper("socket: %v", err)
	}
	unix.Close(fd)
	if _, err := unix.Write(3, []byte{'D'}); err != nil {
		fatalHelper("saying done: %v", err)
	}
	var b [1]byte
	if n, err := unix.Read(3, b[:]); n != 1 || err != nil || b[0] != 'Q' {
		fatalHelper("waiting for the word: %d %v", n, err)
	}
}

// helperSlotSignal says its thread's id, makes one call (which the test's
// supervisor refuses) on that thread, says 'S' when a SIGUSR1 reached
// it, and 'D' with the call's outcome when it returned.
func helperSlotSignal() {
	got := make(chan os.Signal, 1)
	signal.Notify(got, syscall.SIGUSR1)
	go func() {
		<-got
		unix.Write(3, []byte{'S'})
	}()
	runtime.LockOSThread()
	arch, err := HostArch()
	if err != nil {
		fatalHelper("%v", err)
	}
	prog, err := Build(Rules{Network: NetworkNotify}, arch)
	if err != nil {
		fatalHelper("%v", err)
	}
	lfd, err := InstallWithKillableListener(prog)
	if err != nil {
		fatalHelper("InstallWithKillableListener: %v", err)
	}
	if err := unix.Sendmsg(3, []byte(strconv.Itoa(unix.Gettid())), unix.UnixRights(lfd), nil, 0); err != nil {
		fatalHelper("sending the listener: %v", err)
	}
	unix.Close(lfd)
	_, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	unix.Write(3, []byte("D"+errName(err)))
}

// ---- tests (run in the unfiltered test process) ----

func requireSeccomp(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil || !bytes.Contains(b, []byte("\nSeccomp:")) {
		t.Skip("kernel without seccomp")
	}
}

func parseResults(t *testing.T, out []byte) map[string]results {
	t.Helper()
	all := map[string]results{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		who, js, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "RESULT "), " ")
		if !ok || !strings.HasPrefix(sc.Text(), "RESULT ") {
			continue
		}
		r := results{}
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatalf("bad helper output %q: %v", sc.Text(), err)
		}
		all[who] = r
	}
	return all
}

func expect(t *testing.T, who string, r results, key, want string) {
	t.Helper()
	if got, ok := r[key]; !ok {
		t.Errorf("%s: %s missing", who, key)
	} else if got != want {
		t.Errorf("%s: %s = %s, want %s", who, key, got, want)
	}
}

func TestKernelDeny(t *testing.T) {
	requireSeccomp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=deny")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.Bytes())
	}
	r := parseResults(t, out)["deny"]
	if r == nil {
		t.Fatalf("no result in helper output:\n%s", out)
	}
	t.Logf("results: %v", r)
	expect(t, "deny", r, "install", "ok")

	// Controls: without the filter these work (or fail differently),
	// so the EACCES/EPERM below come from the filter.
	expect(t, "deny", r, "before.socket_inet", "ok")
	expect(t, "deny", r, "before.socket_inet6", "ok")
	expect(t, "deny", r, "before.connect_unix", "ENOENT")
	expect(t, "deny", r, "before.sendto_addr", "EISCONN")
	expect(t, "deny", r, "before.socketpair_unix_dgram", "ok")

	expect(t, "deny", r, "after.socket_inet", "EACCES")
	expect(t, "deny", r, "after.socket_inet6", "EACCES")
	expect(t, "deny", r, "after.socket_unix_stream", "ok")
	expect(t, "deny", r, "after.connect_unix", "EACCES")
	expect(t, "deny", r, "after.socketpair_unix_stream", "ok")
	expect(t, "deny", r, "after.socketpair_unix_dgram", "EACCES")
	expect(t, "deny", r, "after.sendto_null", "ok")
	expect(t, "deny", r, "after.sendto_addr", "EACCES")
	expect(t, "deny", r, "after.io_uring_setup", "EPERM")
	if r["before.io_uring_setup"] == "EPERM" {
		t.Logf("io_uring_setup fails with EPERM even without the filter (io_uring disabled?): check is weak")
	}

	if r["before.ptmx"] != "" {
		t.Logf("no /dev/ptmx (%s): terminal checks skipped", r["before.ptmx"])
		return
	}
	for _, k := range []string{"tiocsti", "tiocsti_hi", "tioclinux"} {
		expect(t, "deny", r, "after."+k, "EPERM")
		if r["before."+k] == "EPERM" {
			t.Logf("%s fails with EPERM even without the filter (unprivileged?): check is weak", k)
		}
	}
	expect(t, "deny", r, "after.tiocgwinsz", "ok")
}

// helperProc is a helper process started by startHelper, with the
// listener of the filter it installed.
type helperProc struct {
	cmd            *exec.Cmd
	end            int // the test's end of the socket pair (the helper's fd 3)
	listener       int
	msg            string // what came with the listener
	stdout, stderr bytes.Buffer
	waited         bool
}

// startHelper starts the test binary as helper mode, with a socket pair
// as its fd 3, and receives the listener the helper sends over it. The
// helper is killed and every descriptor closed when the test ends, unless
// it was waited for (wait).
func startHelper(t *testing.T, mode string, timeout time.Duration) *helperProc {
	t.Helper()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &helperProc{end: sp[0], listener: -1}
	t.Cleanup(func() { unix.Close(h.end) })
	childEnd := os.NewFile(uintptr(sp[1]), "helper-sock")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	h.cmd = exec.CommandContext(ctx, os.Args[0])
	h.cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	h.cmd.ExtraFiles = []*os.File{childEnd} // fd 3
	h.cmd.Stdout = &h.stdout
	h.cmd.Stderr = &h.stderr
	if err := h.cmd.Start(); err != nil {
		childEnd.Close()
		t.Fatal(err)
	}
	childEnd.Close()
	t.Cleanup(func() {
		if !h.waited {
			h.cmd.Process.Kill()
			h.cmd.Wait()
		}
	})

	pfd := []unix.PollFd{{Fd: int32(h.end), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 10000); err != nil || n == 0 {
		t.Fatalf("waiting for the listener: n=%d err=%v; stderr:\n%s", n, err, h.stderr.Bytes())
	}
	buf := make([]byte, 32)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(h.end, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		t.Fatalf("recvmsg: %v; stderr:\n%s", err, h.stderr.Bytes())
	}
	h.msg = string(buf[:n])
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("no control message (%v); stderr:\n%s", err, h.stderr.Bytes())
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("no fd received: %v", err)
	}
	h.listener = fds[0]
	t.Cleanup(func() { unix.Close(h.listener) })
	return h
}

// wait waits for the helper to exit.
func (h *helperProc) wait() error {
	h.waited = true
	return h.cmd.Wait()
}

func TestKernelNotify(t *testing.T) {
	requireSeccomp(t)
	testNotify(t)
}

// A turn of the loop that is slow to take its notification (its thread
// not run for longer than the watch waits) is not left behind: left
// behind before its RECV, it would find the notification taken by the
// loop that replaced it, and wait in RECV for the next one, which may
// never come (the last call of the command's, and the supervisor's
// goroutine is left in the kernel).
func TestKernelSlowReceiveNotLeftBehind(t *testing.T) {
	requireSeccomp(t)
	var slowed atomic.Int32
	slept := make(chan string, 1) // the slowed goroutine's header in a stack dump
	testHookBeforeReceive = func() {
		if slowed.Add(1) == 1 {
			time.Sleep(50 * turnTick) // the watch leaves a turn behind after two ticks
			b := make([]byte, 64)
			header, _, _ := strings.Cut(string(b[:runtime.Stack(b, false)]), "[")
			slept <- header + "["
		}
	}
	defer func() { testHookBeforeReceive = nil }()
	h := startHelper(t, "one-call", 30*time.Second)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- SuperviseUntil(h.listener, stop, AllowThreadGroup(h.cmd.Process.Pid), nil) }()

	// The helper's one call has been answered.
	buf := make([]byte, 1)
	if n, err := unix.Read(h.end, buf); n != 1 || err != nil || buf[0] != 'D' {
		t.Fatalf("read %q, %v; want D; stderr:\n%s", buf[:n], err, h.stderr.Bytes())
	}
	var header string
	select {
	case header = <-slept:
	case <-time.After(10 * time.Second):
		t.Fatal("the slowed turn did not go on")
	}
	// No call is pending: the slowed goroutine must be back in poll (or
	// gone), not waiting in RECV.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b := make([]byte, 1<<20)
		stacks := string(b[:runtime.Stack(b, true)])
		_, mine, found := strings.Cut(stacks, header)
		mine, _, _ = strings.Cut(mine, "\n\ngoroutine ")
		if !found || strings.Contains(mine, "unix.Poll(") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slowed turn's goroutine is not back in poll with no call pending:\n%s%s", header, mine)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := unix.Write(h.end, []byte{'Q'}); err != nil {
		t.Fatal(err)
	}
	if err := h.wait(); err != nil {
		t.Errorf("helper: %v; stderr:\n%s", err, h.stderr.Bytes())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("SuperviseUntil: %v", err)
		}
	case <-time.After(30 * time.Second):
		close(stop)
		t.Errorf("SuperviseUntil did not return after the helper exited")
	}
}

// A child's call waiting for a place off the loop (all of them taken)
// gives way to a signal sent to its thread, as a blocking call does: with
// a killable-only listener the caller takes no signal until answered, so
// the supervisor itself must answer (the call restarts: Go's handlers are
// SA_RESTART) rather than hold the signal until a place is free.
func TestKernelSlotWaitTakesSignals(t *testing.T) {
	requireSeccomp(t)
	if !KillableRecv() {
		t.Skip("no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19): a waiting caller takes its signals")
	}
	for range childCalls {
		childPlaces.tokens <- struct{}{}
	}
	freed := false
	free := func() {
		if !freed {
			freed = true
			for range childCalls {
				childPlaces.Release()
			}
		}
	}
	defer free()
	h := startHelper(t, "slot-signal", 30*time.Second)
	stop := make(chan struct{})
	defer close(stop)
	// Refused, and so answered off the loop (a denied callback is given).
	go func() { _ = SuperviseUntil(h.listener, stop, func(int) bool { return false }, func(Notification) {}) }()
	tid, err := strconv.Atoi(h.msg)
	if err != nil {
		t.Fatalf("the helper's tid: %q", h.msg)
	}
	// Waiting in socket(): /proc/TID/syscall starts with its number.
	waitFor(t, 10*time.Second, "the helper's thread in socket()", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", h.cmd.Process.Pid, tid))
		return err == nil && strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_SOCKET)+" ")
	})
	signalWaiting(t, h, tid)
	b := make([]byte, 16)
	free()
	n, err := unix.Read(h.end, b)
	if err != nil || string(b[:n]) != "DEACCES" {
		t.Fatalf("read %q, %v; want DEACCES (the call made again, and refused); stderr:\n%s", b[:n], err, h.stderr.Bytes())
	}
	if err := h.wait(); err != nil {
		t.Errorf("helper: %v; stderr:\n%s", err, h.stderr.Bytes())
	}
}

// waitFor waits until cond holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testNotify(t *testing.T) {
	h := startHelper(t, "notify", 30*time.Second)
	cmd, listener := h.cmd, h.listener
	stdout, stderr := &h.stdout, &h.stderr

	var mu sync.Mutex
	var denied []Notification
	stop := make(chan struct{})
	superviseDone := make(chan error, 1)
	go func() {
		superviseDone <- SuperviseUntil(listener, stop, AllowThreadGroup(cmd.Process.Pid), func(n Notification) {
			mu.Lock()
			denied = append(denied, n)
			mu.Unlock()
		})
	}()

	werr := h.wait()
	if werr != nil {
		t.Errorf("helper: %v\nstdout:\n%s\nstderr:\n%s", werr, stdout.Bytes(), stderr.Bytes())
	}
	// Every filtered task has exited and been reaped: SuperviseUntil must
	// notice (POLLHUP) and return by itself.
	select {
	case err := <-superviseDone:
		if err != nil {
			t.Errorf("SuperviseUntil: %v", err)
		}
	case <-time.After(30 * time.Second): // generous: only a SuperviseUntil that never returns fails
		close(stop)
		t.Errorf("SuperviseUntil did not return after the filtered processes exited")
		<-superviseDone
	}

	all := parseResults(t, stdout.Bytes())
	s, c := all["S"], all["C"]
	if s == nil || c == nil {
		t.Fatalf("missing results:\n%s\nstderr:\n%s", stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("S: %v", s)
	t.Logf("C: %v", c)
	expect(t, "S", s, "pid", fmt.Sprint(cmd.Process.Pid))
	expect(t, "S", s, "socket_inet", "ok")
	expect(t, "S", s, "connect_unix", "ENOENT") // continued, really executed
	expect(t, "S", s, "io_uring_setup", "EPERM")
	expect(t, "S", s, "child", "ok")
	expect(t, "C", c, "socket_inet", "EACCES")
	expect(t, "C", c, "socketpair_unix_stream", "ok")
	expect(t, "C", c, "connect_unix", "EACCES")

	arch, _ := HostArch()
	mu.Lock()
	defer mu.Unlock()
	var sawSocket, sawConnect bool
	for _, n := range denied {
		t.Logf("denied: tid %d %s args %#x", n.Pid, SyscallName(arch, n.Nr), n.Args[:3])
		if fmt.Sprint(n.Pid) != c["tid"] {
			t.Errorf("denied a call from tid %d, only C (tid %s) should be denied", n.Pid, c["tid"])
		}
		switch SyscallName(arch, n.Nr) {
		case "socket":
			sawSocket = sawSocket || n.Args[0] == unix.AF_INET
		case "connect":
			sawConnect = true
		}
	}
	if !sawSocket || !sawConnect {
		t.Errorf("denied callback: socket(AF_INET) seen %v, connect seen %v; want both", sawSocket, sawConnect)
	}
}

// The socket kinds children get, in the kernel's numbers.
func TestChildFamilyInKernelNumbers(t *testing.T) {
	for _, c := range []struct {
		domain, proto int
		want          bool
	}{
		{unix.AF_INET, 0, true}, {unix.AF_INET6, unix.IPPROTO_TCP, true},
		{unix.AF_NETLINK, unix.NETLINK_ROUTE, true}, {unix.AF_NETLINK, unix.NETLINK_SOCK_DIAG, false},
		{unix.AF_UNIX, 0, true}, {unix.AF_UNIX, 1, false},
		{unix.AF_PACKET, 0, false}, {unix.AF_CAN, 1, false}, {unix.AF_VSOCK, 0, false},
	} {
		if got := ChildFamily(c.domain, c.proto); got != c.want {
			t.Errorf("ChildFamily(%d, %d) = %v, want %v", c.domain, c.proto, got, c.want)
		}
	}
	for typ, want := range map[int]bool{
		unix.SOCK_STREAM: true, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC: true, unix.SOCK_STREAM | unix.SOCK_NONBLOCK: true,
		unix.SOCK_DGRAM: false, unix.SOCK_RAW: false,
	} {
		if got := UnixStreamType(typ); got != want {
			t.Errorf("UnixStreamType(%#x) = %v, want %v", typ, got, want)
		}
	}
}

// A child's call is answered off the loop that answers the command's own:
// while the answer to a child's call is held (as reading a child's memory
// can be, for as long as it keeps its memory map busy), the command's own
// calls still go through. Held in child (answered off the loop from the
// start) and in observe (a turn of the loop itself, left behind).
func TestKernelChildAnswersOffLoop(t *testing.T) {
	requireSeccomp(t)
	for _, where := range []string{"child", "observe"} {
		t.Run(where, func(t *testing.T) { testChildAnswersOffLoop(t, where) })
	}
}

func testChildAnswersOffLoop(t *testing.T, where string) {
	h := startHelper(t, "offloop", 60*time.Second)
	cmd, listener, parentEnd, stderr := h.cmd, h.listener, h.end, &h.stderr
	buf := make([]byte, 1)

	release := make(chan struct{})
	var once sync.Once
	var held atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	own := AllowThreadGroup(cmd.Process.Pid)
	hold := func(n Notification) {
		once.Do(func() {
			held.Store(true)
			_, _ = unix.Write(parentEnd, []byte{'G'})
			<-release
		})
	}
	child := func(n Notification, r Reply) bool {
		hold(n)
		return false
	}
	var observe func(Notification, Reply) bool
	if where == "observe" {
		child = nil
		observe = func(n Notification, r Reply) bool {
			if !own(n.Pid) {
				hold(n)
			}
			return false
		}
	}
	go func() {
		_ = SuperviseChildren(listener, stop, own, child, nil, observe)
	}()
	pfd := []unix.PollFd{{Fd: int32(parentEnd), Events: unix.POLLIN}}
	var n int
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err = unix.Poll(pfd, int(time.Until(deadline).Milliseconds()))
		if err != unix.EINTR || time.Now().After(deadline) {
			break
		}
	}
	close(release)
	if err != nil || n != 1 {
		t.Fatalf("the command's own call did not return within 20 s while a child's answer was held (held: %v, poll: %d, %v); stderr:\n%s", held.Load(), n, err, stderr.Bytes())
	}
	if _, err := unix.Read(parentEnd, buf); err != nil || buf[0] != 'D' {
		t.Fatalf("read %q, %v; want D; stderr:\n%s", buf, err, stderr.Bytes())
	}
	if err := h.wait(); err != nil {
		t.Errorf("helper: %v; stderr:\n%s", err, stderr.Bytes())
	}
}

// A poll of the listener that says POLLERR and not POLLHUP (the kernel
// could not take the filter's lock: a signal of the supervisor's thread
// interrupted its wait, which a child can cause) does not end the
// supervisor: the helper's call pending then is still answered.
func TestKernelPollErrIsNotTheEnd(t *testing.T) {
	requireSeccomp(t)
	var faked atomic.Int32
	hook := func(rev *int16) {
		if *rev&unix.POLLIN != 0 && faked.Add(1) <= 3 {
			*rev = unix.POLLERR
		}
	}
	testHookPolled.Store(&hook)
	defer testHookPolled.Store(nil)
	testAnsweredThrough(t, func(h *helperProc, stop chan struct{}) error {
		return SuperviseUntil(h.listener, stop, AllowThreadGroup(h.cmd.Process.Pid), nil)
	})
	if faked.Load() == 0 {
		t.Fatal("no poll said POLLIN: the test tested nothing")
	}
}

// SECCOMP_IOCTL_NOTIF_ID_VALID failing with EINTR (the kernel's wait for
// the filter's lock interrupted by a signal) says nothing of the call: the
// supervisor asks again, neither ending nor taking the call for gone.
func TestKernelIDValidInterrupted(t *testing.T) {
	requireSeccomp(t)
	var interrupted atomic.Int32
	interrupt := func() {
		var calls atomic.Int32
		hook := func() error {
			if calls.Add(1)%2 == 1 { // the first ask of each, and every other one
				interrupted.Add(1)
				return unix.EINTR
			}
			return nil
		}
		testHookIDValid.Store(&hook)
	}
	defer testHookIDValid.Store(nil)
	t.Run("loop", func(t *testing.T) {
		interrupt()
		testAnsweredThrough(t, func(h *helperProc, stop chan struct{}) error {
			return SuperviseUntil(h.listener, stop, AllowThreadGroup(h.cmd.Process.Pid), nil)
		})
	})
	t.Run("valid", func(t *testing.T) {
		interrupt()
		testAnsweredThrough(t, func(h *helperProc, stop chan struct{}) error {
			return ObserveUntil(h.listener, stop, func(n Notification, r Reply) {
				if !r.Valid() {
					t.Error("a pending call taken for gone")
					return
				}
				_ = r.Continue()
			})
		})
	})
	if interrupted.Load() < 2 {
		t.Fatal("SECCOMP_IOCTL_NOTIF_ID_VALID not interrupted in each: the test tested nothing")
	}
}

// testAnsweredThrough runs the one-call helper under supervise and fails
// unless its call is answered before supervise returns.
func testAnsweredThrough(t *testing.T, supervise func(h *helperProc, stop chan struct{}) error) {
	t.Helper()
	h := startHelper(t, "one-call", 60*time.Second)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- supervise(h, stop) }()
	ended := false
	defer func() {
		// The supervisor's goroutines read the test's hooks: ended before
		// the test resets them.
		close(stop)
		if !ended {
			<-done
		}
	}()
	said := make(chan byte, 1)
	go func() {
		buf := make([]byte, 1)
		if n, _ := unix.Read(h.end, buf); n == 1 {
			said <- buf[0]
		}
		close(said)
	}()
	select {
	case b := <-said:
		if b != 'D' {
			t.Fatalf("the helper said %q, want D; stderr:\n%s", b, h.stderr.Bytes())
		}
	case err := <-done:
		ended = true
		t.Fatalf("the supervisor ended (%v) with the helper's call unanswered", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the helper's call was not answered; stderr:\n%s", h.stderr.Bytes())
	}
	if _, err := unix.Write(h.end, []byte{'Q'}); err != nil {
		t.Fatal(err)
	}
	if err := h.wait(); err != nil {
		t.Errorf("helper: %v; stderr:\n%s", err, h.stderr.Bytes())
	}
}

// An observer's call waiting for a place gives way to a signal of its
// thread's without going on unlooked at: the call is made again after the
// handler (ERESTARTNOINTR), looked at afresh, and then goes on; it never
// fails with EINTR.
func TestKernelObservedWaitRestartsOnSignal(t *testing.T) {
	requireSeccomp(t)
	if !KillableRecv() {
		t.Skip("no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19): a waiting caller takes its signals")
	}
	places := NewObserverPlaces(1)
	places.tokens <- struct{}{} // every place taken
	held := true
	defer func() {
		if held {
			places.Release()
		}
	}()
	h := startHelper(t, "slot-signal", 30*time.Second)
	stop := make(chan struct{})
	done := make(chan error, 1)
	var looks atomic.Int32
	go func() {
		done <- ObserveUntil(h.listener, stop, func(n Notification, r Reply) {
			looks.Add(1)
			r.OffLoop(func() {
				if !places.Take(n.Pid, r) {
					return
				}
				defer places.Release()
				_ = r.Continue()
			})
		})
	}()
	defer func() {
		close(stop)
		<-done
	}()
	tid, err := strconv.Atoi(h.msg)
	if err != nil {
		t.Fatalf("the helper's tid: %q", h.msg)
	}
	waitFor(t, 10*time.Second, "the helper's call looked at", func() bool { return looks.Load() == 1 })
	signalWaiting(t, h, tid)
	b := make([]byte, 16)
	waitFor(t, 10*time.Second, "the call made again and looked at again", func() bool { return looks.Load() == 2 })
	held = false
	places.Release()
	n, err := unix.Read(h.end, b)
	if err != nil || string(b[:n]) != "Dok" {
		t.Fatalf("read %q, %v; want Dok (the call made again, and gone on); stderr:\n%s", b[:n], err, h.stderr.Bytes())
	}
	if err := h.wait(); err != nil {
		t.Errorf("helper: %v; stderr:\n%s", err, h.stderr.Bytes())
	}
}

// signalWaiting sends SIGUSR1 to the helper's thread tid, whose call waits
// for a place, and checks that its handler ran (the helper writes 'S')
// before the call returned.
func signalWaiting(t *testing.T, h *helperProc, tid int) {
	t.Helper()
	if err := unix.Tgkill(h.cmd.Process.Pid, tid, unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	pfd := []unix.PollFd{{Fd: int32(h.end), Events: unix.POLLIN}}
	waitFor(t, 10*time.Second, "the signal handled while the call waits for a place", func() bool {
		n, _ := unix.Poll(pfd, 100)
		return n == 1
	})
	b := make([]byte, 1)
	if n, err := unix.Read(h.end, b); n != 1 || err != nil || b[0] != 'S' {
		t.Fatalf("read %q, %v; want S (the signal handled before the call returned); stderr:\n%s", b[:n], err, h.stderr.Bytes())
	}
}
