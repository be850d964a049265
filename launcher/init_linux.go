package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/seccomp"
)

// RunInit is grok-sandbox's own stage inside the sandbox, started by bwrap
// as "grok-sandbox __sandbox-init FD [--masked] -- COMMAND...". It reads its
// config from FD, then:
//
//  1. when bwrap had no room for every mask, mounts them (with the
//     capabilities bwrap left for this), drops every capability and execs
//     itself again with --masked, so nothing privileged survives;
//  2. installs the seccomp filter; when the command's children must lose
//     the network, starts the command as a child carrying a filter whose
//     network syscalls notify this process, and answers them: allowed for
//     the command's own threads, EACCES for every other process;
//  3. otherwise execs the command.
//
// It returns an exit status; it only returns for a refusal or when it
// supervised the command, with the command's status.
func RunInit(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "grok-sandbox: init: "+format+"\n", a...)
		return ExitRefused
	}
	if len(args) < 3 {
		return fail("usage: %s FD [--masked] -- COMMAND...", InitCommand)
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		return fail("bad descriptor %q", args[0])
	}
	rest := args[1:]
	masked := false
	if rest[0] == "--masked" {
		masked, rest = true, rest[1:]
	}
	if len(rest) < 2 || rest[0] != "--" {
		return fail("usage: %s FD [--masked] -- COMMAND...", InitCommand)
	}
	command := rest[1:]

	data, err := readFD(fd)
	if err != nil {
		return fail("reading the config: %v", err)
	}
	var cfg initConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fail("bad config: %v", err)
	}

	runtime.LockOSThread()
	if len(cfg.Masks) > 0 && !masked {
		if err := mountMasks(&cfg); err != nil {
			return fail("%v", err)
		}
		if err := dropCapabilities(); err != nil {
			return fail("%v", err)
		}
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return fail("rewinding the config: %v", err)
		}
		argv := append([]string{"grok-sandbox", InitCommand, args[0], "--masked", "--"}, command...)
		err := syscall.Exec("/proc/self/exe", argv, os.Environ())
		return fail("re-exec after masking: %v", err)
	}
	unix.Close(fd)
	if err := noCapabilities(); err != nil {
		return fail("%v", err)
	}

	return startCommand(&cfg, BackendBwrap, nil, command, os.Environ())
}

// startCommand installs the seccomp filter on the calling (locked) thread,
// after restrict (Landlock, for that backend) has run there, and then execs
// the command, or, when its children must lose the network, forks it from
// that thread and supervises it. It returns only on failure, or with the
// supervised command's status.
func startCommand(cfg *initConfig, backend string, restrict func() error, command, env []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
		return ExitRefused
	}
	arch, err := seccomp.HostArch()
	if err != nil {
		return fail(err)
	}
	prog, err := seccomp.Build(seccomp.Rules{BlockTerminalInjection: true, BlockUserNamespaces: cfg.NoUserNS, Network: cfg.Network}, arch)
	if err != nil {
		return fail(err)
	}
	path, err := lookPathIn(command[0], getenv(env, "PATH"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
		return Code(err)
	}
	if cfg.Network != seccomp.NetworkNotify {
		if restrict != nil {
			if err := restrict(); err != nil {
				return fail(err)
			}
		}
		if err := seccomp.Install(prog); err != nil {
			return fail(err)
		}
		err := syscall.Exec(path, command, env)
		return notFound(command[0], err)
	}
	return supervise(cfg, backend, arch, prog, restrict, path, command, env)
}

// readFD reads fd to EOF without wrapping it in an os.File, whose finalizer
// could close it before the re-exec that needs it again.
func readFD(fd int) ([]byte, error) {
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

func notFound(name string, err error) int {
	fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", name, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return ExitNotFound
	}
	return ExitNotExecutable
}

// mountMasks covers each masked path with the read-only, mode-0000 mask
// file or directory, like bwrap's --ro-bind, and then makes the mask
// sources read-only themselves.
func mountMasks(cfg *initConfig) error {
	for _, m := range cfg.Masks {
		src := cfg.MaskFile
		if m.Dir {
			src = cfg.MaskDir
		}
		if err := bindReadOnly(src, m.Path); err != nil {
			return fmt.Errorf("cannot mask %s: %v", m.Path, err)
		}
	}
	root := filepath.Dir(cfg.MaskFile)
	if err := bindReadOnly(root, root); err != nil {
		return fmt.Errorf("cannot make %s read-only: %v", root, err)
	}
	return nil
}

func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	// A remount must keep the flags the kernel locked on the mount it
	// came from (nosuid, nodev, noexec), or it is refused.
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return unix.Mount("", dst, "", flags, "")
}

// dropCapabilities removes every capability from the calling thread for
// good (bounding set, ambient set, securebits so that root regains none on
// exec, then the permitted set) and sets no_new_privs. The caller execs from
// this thread right after.
func dropCapabilities() error {
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
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 // NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
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

// dropAllCapabilities drops every capability the calling thread holds (as
// root: all of them) and sets no_new_privs; with none held there is nothing
// to drop.
func dropAllCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %v", err)
	}
	if data[0].Permitted|data[1].Permitted|data[0].Effective|data[1].Effective == 0 {
		return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	return noCapabilities()
}

// noCapabilities checks that this thread holds no capability at all: the
// command must never get one.
func noCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %v", err)
	}
	for _, d := range data {
		if d.Effective != 0 || d.Permitted != 0 || d.Inheritable != 0 {
			return errors.New("the init stage still holds capabilities; refusing to start the command")
		}
	}
	return nil
}

// supervise starts the command as a child that carries a notifying filter,
// answers the filter's notifications until the command exits, and returns
// the command's status (128+N for a signal, as shells do).
func supervise(cfg *initConfig, backend string, arch seccomp.Arch, prog []bpf.RawInstruction, restrict func() error, path string, command, env []string) int {
	// Signals a user sends to the sandbox reach this process; pass the
	// ones that ask the command to stop on. Ctrl-C and Ctrl-\ come from
	// the terminal to the whole foreground group, the command included, so
	// they are caught (not ignored: an ignored signal would stay ignored
	// in the command) and dropped here.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2)

	type started struct {
		cmd      *exec.Cmd
		listener int
		err      error
		refused  bool // the sandbox could not be set up (not the command's fault)
	}
	ch := make(chan started, 1)
	go func() {
		// The filter goes on this thread only, and the command is forked
		// from it, so the command and its descendants carry it while the
		// supervisor's other threads do not. The goroutine ends locked, so
		// the filtered thread ends with it.
		runtime.LockOSThread()
		if restrict != nil {
			if err := restrict(); err != nil {
				ch <- started{err: err, refused: true}
				return
			}
		}
		listener, err := seccomp.InstallWithListener(prog)
		if err != nil {
			ch <- started{err: err, refused: true}
			return
		}
		cmd := &exec.Cmd{Path: path, Args: command, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
		err = cmd.Start()
		ch <- started{cmd: cmd, listener: listener, err: err}
	}()
	st := <-ch
	if st.refused {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", st.err)
		return ExitRefused
	}
	if st.err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", command[0], st.err)
		return ExitNotExecutable
	}
	pid := st.cmd.Process.Pid
	v := &violations{cfg: cfg, backend: backend, arch: arch, last: map[string]time.Time{}}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- seccomp.SuperviseUntil(st.listener, stop, seccomp.AllowThreadGroup(pid), v.record)
	}()
	go func() {
		for sig := range sigs {
			if sig != unix.SIGINT && sig != unix.SIGQUIT {
				_ = st.cmd.Process.Signal(sig)
			}
		}
	}()
	// Wait for the command to exit without reaping it: while it is a
	// zombie its pid cannot be recycled, so nothing else can pass for it.
	// Stop answering, then reap.
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		break
	}
	close(stop)
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: supervisor: %v\n", err)
	}
	unix.Close(st.listener)
	err := st.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", command[0], err)
		return ExitRefused
	}
	return 0
}

// violations logs blocked attempts to the event log, rate-limited so that a
// loop cannot flood it: at most one line per process name and syscall a
// second, and at most maxViolations lines per run.
type violations struct {
	cfg     *initConfig
	backend string
	arch    seccomp.Arch
	mu      sync.Mutex
	last    map[string]time.Time
	logged  int
}

const maxViolations = 100

func (v *violations) record(n seccomp.Notification) {
	name := seccomp.SyscallName(v.arch, n.Nr)
	comm := "?"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.Pid)); err == nil {
		comm = strings.TrimSpace(string(b))
	}
	key := comm + "/" + name
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	if v.logged >= maxViolations || now.Sub(v.last[key]) < time.Second {
		return
	}
	v.last[key] = now
	v.logged++
	what := name
	if name == "socket" || name == "socketpair" {
		what = fmt.Sprintf("%s(family %d, type %d)", name, n.Args[0], n.Args[1]&0xf)
	}
	_ = AppendEvent(v.cfg.GrokHome, Event{
		Time:    now.UTC().Format(time.RFC3339Nano),
		Event:   "violation",
		Profile: v.cfg.Profile,
		Backend: v.backend,
		Command: comm,
		Message: fmt.Sprintf("blocked %s: processes started by the wrapped command have no network", what),
	})
}
