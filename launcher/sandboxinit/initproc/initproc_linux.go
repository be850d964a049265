package initproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/initcfg"
)

// PlaceFD moves fd onto target without close-on-exec, and closes fd: the
// launcher's descriptors for bwrap, and the init stage's kept across its
// re-exec (held by a placeholder until then). dup3 replaces what
// target held at once.
func PlaceFD(fd, target int) error {
	if fd == target {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
		return err
	}
	err := unix.Dup3(fd, target, 0)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("dup3: %v", err)
	}
	return nil
}

// ReadFD reads fd to EOF without wrapping it in an os.File, whose finalizer
// could close it before the re-exec that needs it again.
func ReadFD(fd int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// ownDrops counts the calls of DropCapabilities: threads that may hold
// fewer capabilities than the rest of the process.
var ownDrops atomic.Int32

// DropCapabilities removes every capability from the calling thread for
// good (bounding set, ambient set, securebits so that root regains none on
// exec, then the permitted set) and sets no_new_privs. The caller execs from
// this thread right after.
func DropCapabilities() error {
	ownDrops.Add(1)
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %v", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secureBits, 0, 0, 0); err != nil {
		return fmt.Errorf("setting securebits: %v", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %v", err)
	}
	return nil
}

// DropAllCapabilities drops every capability the calling thread holds (as
// root: all of them) and sets no_new_privs; with none held there is nothing
// to drop.
func DropAllCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %v", err)
	}
	if data[0].Permitted|data[1].Permitted|data[0].Effective|data[1].Effective|data[0].Inheritable|data[1].Inheritable == 0 {
		return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	return DropCapabilities()
}

// ThreadFilters is how many seccomp filters the calling thread carries
// (Seccomp_filters in /proc/thread-self/status, Linux 5.9).
func ThreadFilters() (int, error) {
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp_filters:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Seccomp_filters in /proc/thread-self/status")
}

// VerifyThread reads the calling thread's confinement back from the kernel:
// no_new_privs, seccomp in filter mode with at least filters filters, the
// filter refusing TIOCSTI (so it is the one grok-sandbox built), and every
// capability set empty. The command is forked or exec'd from this thread.
//
// An ordinary user outside any user namespace (the Landlock backend) keeps
// the full bounding set, which only root can drop; with no_new_privs and no
// permitted capability it grants nothing, so it is checked only inside the
// sandbox (bwrap drops it) and for root: bounding says whether it is.
func VerifyThread(filters int, bounding bool) error {
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return fmt.Errorf("cannot read /proc/thread-self/status to check the sandbox: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	if got["NoNewPrivs"] != "1" {
		return errors.New("no_new_privs is not set")
	}
	if got["Seccomp"] != "2" {
		return fmt.Errorf("no seccomp filter is in force (Seccomp: %s)", got["Seccomp"])
	}
	if v, ok := got["Seccomp_filters"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < filters {
			return fmt.Errorf("%s seccomp filters are in force, want %d", v, filters)
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if k == "CapBnd" && !bounding {
			continue
		}
		v, ok := got[k]
		if !ok || strings.Trim(v, "0") != "" {
			return fmt.Errorf("capabilities are left (%s: %s)", k, v)
		}
	}
	// Without the filter, TIOCSTI on /dev/null fails with ENOTTY.
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open /dev/null: %v", err)
	}
	defer unix.Close(null)
	var c byte
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(null), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	if errno != unix.EPERM {
		return fmt.Errorf("the seccomp filter does not refuse TIOCSTI (%v)", errno)
	}
	return nil
}

// caughtSignals are every signal that would stop or crash the init stage or
// a helper of its: any process in the sandbox can send them.
var caughtSignals = []os.Signal{unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGABRT, unix.SIGTRAP, unix.SIGSYS,
	unix.SIGPIPE, unix.SIGALRM, unix.SIGVTALRM, unix.SIGPROF, unix.SIGXCPU, unix.SIGXFSZ,
	unix.SIGSTKFLT, unix.SIGPWR, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}

// ShrugSignals makes a helper survive every signal a process in the
// sandbox can send it but SIGKILL and SIGSTOP (a stopped or killed helper
// fails closed; see `grok-sandbox help violations` and `help network`): they are
// caught and dropped. The Go runtime would otherwise crash on a SIGSEGV
// sent with kill, and end on SIGTERM or SIGPIPE.
func ShrugSignals() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, caughtSignals...)
	go func() {
		for range c {
		}
	}()
}

// CatchSignals sends c every signal that ShrugSignals drops, for a caller
// that passes some of them on (pid 1, to the command) and drops the rest.
func CatchSignals(c chan<- os.Signal) {
	signal.Notify(c, caughtSignals...)
}

// Catch is CatchSignals begun early, on a goroutine of its own: the
// runtime enables each signal with a round trip to its signal thread
// (about 1.5 ms for all of them on a 2-core machine), which can overlap
// the init stage's other work. Nothing in the sandbox but the init stage's
// own helpers runs before the command, so the signals must be caught only
// by then: Wait.
type Catch struct {
	C    chan os.Signal
	done chan struct{}
}

// StartCatching begins catching every signal ShrugSignals drops, to C.
func StartCatching() *Catch {
	c := &Catch{C: make(chan os.Signal, 8), done: make(chan struct{})}
	go func() {
		CatchSignals(c.C)
		close(c.done)
	}()
	return c
}

// Wait returns once every signal is caught.
func (c *Catch) Wait() { <-c.done }

// NotFound says on stderr why the command name could not be started, and
// is the exit status for it: 127 when there is no such file, 126 otherwise
// (grok-sandbox help commands: "Exit status").
func NotFound(name string, err error) int {
	fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", name, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return initcfg.ExitNotFound
	}
	return initcfg.ExitNotExecutable
}

// CloseFrom marks every descriptor from first up close-on-exec.
func CloseFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: walk the open descriptors.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return err
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// StartClean starts cmd, a helper of the init stage's, with no descriptor
// of the init stage's but cmd's own: every descriptor is close-on-exec for
// the fork, and those that were not are made so again afterwards (the
// init stage keeps them across its re-exec). A helper cannot close them
// itself: by then its Go runtime may have opened its own under the same
// numbers.
func StartClean(cmd *exec.Cmd) error {
	return WithNothingInherited(cmd.Start)
}

// WithNothingInherited runs start (which forks and execs a helper) with
// every descriptor of this process close-on-exec, as StartClean does.
func WithNothingInherited(start func() error) error {
	var inherit []int
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			inherit = append(inherit, fd)
		}
	}
	for _, fd := range inherit {
		unix.CloseOnExec(fd)
	}
	err = start()
	for _, fd := range inherit {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
	}
	return err
}
