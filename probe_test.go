//go:build linux

package main

// netprobe is a small program compiled into the test binary (registered in
// TestMain) that the enforcement scripts run inside and outside sandboxes:
// servers to reach, clients that try to reach them, attempts on the parent
// process, terminal injection, and a pty driver.

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const probeUsage = `usage: netprobe SUBCOMMAND ARGS
  serve DIR                 servers (tcp, udp, unix, abstract) until DIR/stop
  mockllm ADDR SCRIPT DIR   a scripted model API (chat completions, responses)
                            on ADDR until DIR/stop (probe_llm_test.go)
  waitfile PATH             wait up to 30 s for PATH
  waitcmd PID NAME          wait up to 30 s until PID's argv[0] (its base name) is NAME,
                            e.g. until it has exec'd NAME
  waitline FILE TEXT [N]    wait up to 30 s until FILE holds N (default 1) lines that
                            contain TEXT
  guard PID                 try to change PID's limits, scheduling, affinity,
  ids FILE                  chown FILE and change ids, to the caller's own and to others
                            priorities and to queue it a SIGSEGV: one line each,
                            "refused" or "DONE"; then the same on itself (pid 0)
  tcp|udp|abstract ADDR     say ping, expect pong (ADDR or a file holding it)
  unix PATH                 the same on a Unix stream socket
  socketpair                an AF_UNIX stream pair, write and read
  unix-dgram PATH           one datagram from a Unix datagram socket to PATH
  uring                     io_uring_setup(1, params)
  ptrace-parent | vmwrite-parent | pidfd-getfd-parent
  tiocsti                   TIOCSTI (twice) and TIOCLINUX on /dev/tty must be EPERM
  inet                      socket(AF_INET, SOCK_STREAM)
  listen-tcp ADDR FILE      serve pong on TCP ADDR (port 0: any), its address written to FILE, until killed
  serve-http ADDR FILE      an HTTP server answering "hello from http" on ADDR, its address written to FILE, until killed
  roundtrips [--stall PID MS] N
                            N loopback connect/accept/ping/pong round trips on 127.0.0.1; prints the time taken;
                            --stall: SIGSTOP PID just before the first socket call, SIGCONT it MS ms later
  listen-abstract NAME      listen on the abstract Unix socket @NAME (NAME: or a file holding it)
  unix-echo ADDR            listen on the Unix socket ADDR (a path, or @NAME), connect to it,
                            exchange a line; prints the name the listener has
  unix-stale PATH           bind PATH, close it, connect to it: prints the error
  unix-hold PATH READY      listen on PATH with a backlog of 0, accept nothing; create READY
  unix-fill PATH N          N blocking connects to PATH at once, then wait to be killed
  create-mode PATH MODE     open(PATH, O_CREAT|O_EXCL, MODE) (octal)
  readable PATH...          open each PATH for reading, in one process;
                            print readable=N (how many opened)
  memwrite PID              open /proc/PID/mem for writing (never writes)
  exchange-loop A B SECS    swap A and B (renameat2 RENAME_EXCHANGE) for SECS seconds
  keyring-add NAME VALUE    add a user key to the user keyring (@u)
  keyring-read NAME         print the user key NAME of the user keyring (@u)
  layers [--any-bounding] [--proc-writable] [--mask PATH]... [--readonly PATH]...
                            inside a sandbox: every layer grok-sandbox promises is
                            in force for this process (see probeLayers)
  pty [--size RxC] [--after TEXT --send STRING] [--intr-after TEXT] -- CMD...
                            CMD on a new pty (default 40x120); STRING may hold \r
  zip DIR OUT               a zip of DIR's files named relative to DIR (a Go module
                            zip when DIR holds MODULE@VERSION/...)`

func probeMain() int {
	args := os.Args[1:]
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, probeUsage)
		return 2
	}
	cmd, args := args[0], args[1:]
	one := func() string {
		if len(args) != 1 {
			fmt.Fprintln(os.Stderr, probeUsage)
			os.Exit(2)
		}
		return args[0]
	}
	// two is one for a subcommand of two arguments.
	two := func() (string, string) {
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, probeUsage)
			os.Exit(2)
		}
		return args[0], args[1]
	}
	var err error
	switch cmd {
	case "serve":
		err = probeServe(one())
	case "mockllm":
		err = probeMockLLM(args)
	case "waitfile":
		err = probeWaitFile(one(), probeWait)
	case "waitcmd":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		err = probeWaitCmd(args[0], args[1], probeWait)
	case "waitline":
		n := 1
		if len(args) == 3 {
			n, err = strconv.Atoi(args[2])
		}
		if len(args) < 2 || len(args) > 3 || err != nil {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		err = probeWaitLine(args[0], args[1], n, probeWait)
	case "tcp", "udp":
		err = probeDial(cmd, addrArg(one()))
	case "unix":
		err = probeDial("unix", one())
	case "abstract":
		err = probeDial("unix", "@"+strings.TrimPrefix(addrArg(one()), "@"))
	case "socketpair":
		err = probeSocketpair()
	case "unix-dgram":
		err = probeUnixDgram(one())
	case "uring":
		var params [120]byte // struct io_uring_params
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if err = errnoErr("io_uring_setup", e); err == nil {
			unix.Close(int(fd))
		}
	case "ptrace-parent":
		// PTRACE_SEIZE does not stop the parent; the exit detaches.
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(os.Getppid()), 0, 0, 0, 0)
		err = errnoErr("ptrace(PTRACE_SEIZE, parent)", e)
	case "vmwrite-parent":
		err = probeVMWrite(os.Getppid())
	case "pidfd-getfd-parent":
		err = probePidfdGetfd(os.Getppid())
	case "tiocsti":
		err = probeTIOCSTI()
	case "inet":
		fd, e := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err = e; err == nil {
			unix.Close(fd)
		}
	case "listen-tcp":
		err = probeListenTCP(two())
	case "serve-http":
		err = probeServeHTTP(two())
	case "roundtrips":
		stallPID, stallMS := 0, 0
		if len(args) == 4 && args[0] == "--stall" {
			stallPID, _ = strconv.Atoi(args[1])
			stallMS, _ = strconv.Atoi(args[2])
			args = args[3:]
		}
		if len(args) != 1 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		n, _ := strconv.Atoi(args[0])
		err = probeRoundTrips(n, stallPID, time.Duration(stallMS)*time.Millisecond)
	case "listen-abstract":
		var l net.Listener
		if l, err = net.Listen("unix", "@"+strings.TrimPrefix(addrArg(one()), "@")); err == nil {
			l.Close()
		}
	case "unix-echo":
		err = probeUnixEcho(one())
	case "unix-stale":
		err = probeUnixStale(one())
	case "unix-hold":
		err = probeUnixHold(two())
	case "unix-fill":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		n, _ := strconv.Atoi(args[1])
		err = probeUnixFill(args[0], n)
	case "readable":
		n := 0
		for _, p := range args {
			if f, oerr := os.Open(p); oerr == nil {
				f.Close()
				n++
			}
		}
		fmt.Printf("readable=%d\n", n)
	case "create-mode":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		mode, perr := strconv.ParseUint(args[1], 8, 32)
		if perr != nil {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		var fd int
		if fd, err = unix.Open(args[0], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, uint32(mode)); err == nil {
			unix.Close(fd)
		}
	case "exchange-loop":
		if len(args) != 3 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		secs, _ := strconv.Atoi(args[2])
		n := 0
		for end := time.Now().Add(time.Duration(secs) * time.Second); time.Now().Before(end); n++ {
			if err = unix.Renameat2(unix.AT_FDCWD, args[0], unix.AT_FDCWD, args[1], unix.RENAME_EXCHANGE); err != nil {
				break
			}
		}
		if err == nil && n%2 == 1 {
			// Leave the names as they were.
			err = unix.Renameat2(unix.AT_FDCWD, args[0], unix.AT_FDCWD, args[1], unix.RENAME_EXCHANGE)
		}
	case "memwrite":
		fd, e := unix.Open("/proc/"+one()+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err = e; err == nil {
			unix.Close(fd)
		}
	case "keyring-add":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		_, err = unix.AddKey("user", args[0], []byte(args[1]), unix.KEY_SPEC_USER_KEYRING)
	case "keyring-read":
		var id int
		if id, err = unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", one(), 0); err == nil {
			buf := make([]byte, 256)
			var n int
			if n, err = unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0); err == nil {
				fmt.Println(string(buf[:n]))
			}
		}
	case "guard":
		return probeGuard(one())
	case "ids":
		return probeIDs(one())
	case "layers":
		err = probeLayers(args)
	case "pty":
		return probePty(args)
	case "zip":
		err = probeZip(two())
	default:
		fmt.Fprintln(os.Stderr, probeUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "netprobe %s: %v\n", cmd, describe(err))
		return 1
	}
	fmt.Println("ok")
	return 0
}

// describe names the errno under err, for scripts to match: "... EACCES
// (permission denied)".
func describe(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		return fmt.Sprintf("%v: %s", err, unix.ErrnoName(e))
	}
	return err.Error()
}

func errnoErr(what string, e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return &os.SyscallError{Syscall: what, Err: e}
}

// addrArg is arg, or the contents of the file arg names: scripts cannot
// substitute a file's contents into an argument.
func addrArg(arg string) string {
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		if b, err := os.ReadFile(arg); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return arg
}

func probeDial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "pong\n" {
		return fmt.Errorf("%s %s answered %q", network, addr, buf[:n])
	}
	return nil
}

// probeUnixDgram sends one datagram from a Unix datagram socket to the
// socket bound at path.
func probeUnixDgram(path string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "socket", Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, []byte("ping\n"), 0, &unix.SockaddrUnix{Name: path}); err != nil {
		return &os.SyscallError{Syscall: "sendto", Err: err}
	}
	return nil
}

func probeSocketpair() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "socketpair", Err: err}
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.Write(fds[0], []byte("x")); err != nil {
		return &os.SyscallError{Syscall: "write", Err: err}
	}
	buf := make([]byte, 1)
	if n, err := unix.Read(fds[1], buf); err != nil || n != 1 || buf[0] != 'x' {
		return fmt.Errorf("read back %q: %v", buf[:n], err)
	}
	return nil
}

// probeVMWrite writes one byte into the parent: the lowest byte of its
// stack mapping (far below anything in use), with the value read there
// first when that read is allowed, so a success changes nothing.
func probeVMWrite(pid int) error {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	var addr uint64
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(l, "[stack]") {
			start, _, _ := strings.Cut(l, "-")
			addr, err = strconv.ParseUint(start, 16, 64)
			if err != nil {
				return err
			}
		}
	}
	if addr == 0 {
		return fmt.Errorf("no [stack] in /proc/%d/maps", pid)
	}
	b := []byte{0}
	local := []unix.Iovec{{Base: &b[0], Len: 1}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 1}}
	if _, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil {
		b[0] = 0
	}
	if _, err := unix.ProcessVMWritev(pid, local, remote, 0); err != nil {
		return &os.SyscallError{Syscall: "process_vm_writev(parent)", Err: err}
	}
	return nil
}

func probePidfdGetfd(pid int) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "pidfd_open(parent)", Err: err}
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, 0, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "pidfd_getfd(parent, 0)", Err: err}
	}
	unix.Close(fd)
	return nil
}

// probeTIOCSTI tries to inject a byte into the controlling terminal, with
// the request as is and with bit 32 set (the tty layer ignores the high
// half), and TIOCLINUX: each must fail with EPERM.
func probeTIOCSTI() error {
	tty, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "open /dev/tty", Err: err}
	}
	defer unix.Close(tty)
	c := byte('#')
	var bad []string
	for _, r := range []struct {
		name string
		req  uintptr
	}{
		{"TIOCSTI", unix.TIOCSTI},
		{"TIOCSTI|1<<32", uintptr(unix.TIOCSTI) | 1<<32},
		{"TIOCLINUX", unix.TIOCLINUX},
	} {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(tty), r.req, uintptr(unsafe.Pointer(&c)))
		res := "ok"
		if e != 0 {
			res = unix.ErrnoName(e)
		}
		fmt.Printf("%s: %s\n", r.name, res)
		if e != unix.EPERM {
			bad = append(bad, r.name+" "+res)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not EPERM: %s", strings.Join(bad, ", "))
	}
	return nil
}

// probeWait bounds the waits for a condition (a file, a line, an exec):
// generous, so that only a condition that never comes fails a test, even on
// a loaded machine.
const probeWait = 30 * time.Second

func probeWaitFile(path string, d time.Duration) error {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s did not appear within %v", path, d)
		}
	}
}

func probeWaitCmd(pid, name string, d time.Duration) error {
	last := ""
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			return err // gone before it got there
		}
		argv0, _, _ := strings.Cut(string(b), "\x00")
		if last = filepath.Base(argv0); last == name {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("pid %s is still %q after %v, not %q", pid, last, d, name)
		}
	}
}

func probeWaitLine(path, text string, n int, d time.Duration) error {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		have := 0
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, text) {
				have++
			}
		}
		if have >= n {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s has %d lines with %q after %v, not %d", path, have, text, d, n)
		}
	}
}

// probeServe runs the servers until DIR/stop appears or a signal comes.
func probeServe(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sock := filepath.Join(dir, "unix.sock")
	os.Remove(sock)
	un, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	if err := os.Chmod(sock, 0o777); err != nil {
		return err
	}
	abstract := fmt.Sprintf("grok-sandbox-test-%d", os.Getpid())
	ab, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		return err
	}
	for _, l := range []net.Listener{tcp, un, ab} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					c.SetDeadline(time.Now().Add(5 * time.Second))
					c.Read(make([]byte, 64))
					c.Write([]byte("pong\n"))
				}()
			}
		}()
	}
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udp.WriteTo([]byte("pong\n"), from)
		}
	}()
	for name, addr := range map[string]string{
		"tcp": tcp.Addr().String(), "udp": udp.LocalAddr().String(),
		"unix": sock, "abstract": abstract,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(addr+"\n"), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, unix.SIGTERM)
	for {
		select {
		case <-sigs:
			return nil
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			os.Remove(sock)
			return nil
		}
	}
}

// probePty runs a command with a new pty as its controlling terminal and
// copies what it writes there to stdout (without carriage returns). It can
// type a string once some text appeared, or Ctrl-C. It exits with the
// command's status (128+N for a signal) and kills it after 10 s.
func probePty(args []string) int {
	var after, send, intrAfter string
	rows, cols := 40, 120
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		switch args[0] {
		case "--after":
			after = args[1]
		case "--send":
			// Go escapes (\r for Enter), since scripts cannot write them.
			var err error
			if send, err = strconv.Unquote(`"` + args[1] + `"`); err != nil {
				send = args[1]
			}
		case "--intr-after":
			intrAfter = args[1]
		case "--size":
			r, c, _ := strings.Cut(args[1], "x")
			rows, _ = strconv.Atoi(r)
			cols, _ = strconv.Atoi(c)
		default:
			fmt.Fprintln(os.Stderr, probeUsage)
			return 2
		}
		args = args[2:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, probeUsage)
		return 2
	}
	args = args[1:]
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "netprobe pty: "+format+"\n", a...)
		return 1
	}

	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail("%v", err)
	}
	defer master.Close()
	mfd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		return fail("ptsname: %v", err)
	}
	if err := unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); err != nil {
		return fail("TIOCSWINSZ: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail("%v", err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		return fail("%v", err)
	}
	slave.Close()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	read := make(chan []byte)
	go func() {
		defer close(read)
		for {
			buf := make([]byte, 4096)
			n, err := master.Read(buf)
			if n > 0 {
				read <- buf[:n]
			}
			if err != nil {
				return // EIO: every slave descriptor is closed
			}
		}
	}()

	var seen bytes.Buffer
	timeout := time.After(10 * time.Second)
	var werr error
	exited := false
	for read != nil || !exited {
		select {
		case b, ok := <-read:
			if !ok {
				read = nil
				continue
			}
			os.Stdout.Write(bytes.ReplaceAll(b, []byte("\r"), nil))
			seen.Write(b)
			if after != "" && bytes.Contains(seen.Bytes(), []byte(after)) {
				after = ""
				master.Write([]byte(send))
			}
			if intrAfter != "" && bytes.Contains(seen.Bytes(), []byte(intrAfter)) {
				intrAfter = ""
				master.Write([]byte{3})
			}
		case werr = <-waited:
			exited = true
			// Descendants may keep the terminal open: stop reading soon.
			timeout = time.After(time.Second)
		case <-timeout:
			if !exited {
				unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
				fmt.Fprintln(os.Stderr, "netprobe pty: timed out after 10s; killed")
				<-waited
				return 124
			}
			read, exited = nil, true
		}
	}
	if werr == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		status := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
		fmt.Fprintf(os.Stderr, "netprobe pty: exit status %d\n", status)
		return status
	}
	return fail("%v", werr)
}

// probeLayers checks, from inside a sandbox, every layer that must hold for
// any process there whatever the plan's shape (descriptors are checked by
// the scripts on the wrapped command: the Go runtime opens cgroup files of
// its own): the seccomp filter in force (mode 2, TIOCSTI and the keyring refused), no
// capability in any set, no_new_privs, no writable /proc/PID/mem (pid 1,
// the parent, itself), /proc/sys read-only, each --mask unreadable and each
// --readonly not writable. It reports every failure, not only the first.
func probeLayers(args []string) error {
	var bad []string
	fail := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	var masks, readOnly []string
	bounding, procReadOnly := true, true
	for i := 0; i < len(args); i++ {
		if args[i] == "--proc-writable" {
			// devbox: /proc stays writable for nested user namespaces;
			// only pid 1 (non-dumpable) must be out of reach.
			procReadOnly = false
			continue
		}
		if args[i] == "--any-bounding" {
			// An ordinary user outside a user namespace (Landlock) keeps
			// the bounding set; only root can drop it.
			bounding = false
			continue
		}
		if i+1 >= len(args) {
			return fmt.Errorf("layers: %s needs a path", args[i])
		}
		switch args[i] {
		case "--mask":
			masks = append(masks, args[i+1])
		case "--readonly":
			readOnly = append(readOnly, args[i+1])
		default:
			return fmt.Errorf("layers: unknown argument %q", args[i])
		}
		i++
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	if got["Seccomp"] != "2" {
		fail("Seccomp: %s", got["Seccomp"])
	}
	if got["NoNewPrivs"] != "1" {
		fail("NoNewPrivs: %s", got["NoNewPrivs"])
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if k == "CapBnd" && !bounding {
			continue
		}
		if strings.Trim(got[k], "0") != "" {
			fail("%s: %s", k, got[k])
		}
	}
	if null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		var c byte
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(null), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != unix.EPERM {
			fail("TIOCSTI: %v, want EPERM", e)
		}
		unix.Close(null)
	}
	// KEYCTL_GET_KEYRING_ID (0) of the session keyring (-3).
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, 0, ^uintptr(2), 0); e != unix.EPERM {
		fail("keyctl: %v, want EPERM", e)
	}
	if _, _, e := unix.Syscall6(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0, 0); e != unix.EPERM {
		fail("add_key: %v, want EPERM", e)
	}
	others := []string{"1", strconv.Itoa(os.Getppid()), "self"}
	if !procReadOnly {
		others = others[:1]
	}
	for _, pid := range others {
		if fd, err := unix.Open("/proc/"+pid+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
			fail("/proc/%s/mem opens for writing", pid)
		}
	}
	if fd, err := unix.Open("/proc/sys/kernel/core_pattern", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		fail("/proc/sys/kernel/core_pattern opens for writing")
	}
	for _, m := range masks {
		if fd, err := unix.Open(m, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
			fail("masked %s opens", m)
		} else if err != unix.EACCES {
			fail("masked %s: %v, want EACCES", m, err)
		}
	}
	for _, r := range readOnly {
		if err := unix.Access(r, unix.W_OK); err == nil {
			fail("%s is writable", r)
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// probeZip writes a zip of dir's regular files, each named by its path
// relative to dir: the toolchain scripts' module proxy on disk, without
// compiling a zip program first.
func probeZip(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err == nil {
			_, err = w.Write(b)
		}
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// probeListenTCP serves ping/pong on addr until killed, after writing its
// address to file (through a rename, so a reader never sees half of it).
func probeListenTCP(addr, file string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file+".tmp", []byte(l.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 64)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if n, err := c.Read(buf); err == nil && string(buf[:n]) == "ping\n" {
				c.Write([]byte("pong\n"))
			}
		}()
	}
}

// probeRoundTrips makes n connections to a listener of its own on
// 127.0.0.1, each accepted, one byte each way, and prints the time taken.
func probeRoundTrips(n, stallPID int, stall time.Duration) error {
	if stallPID > 0 {
		// The stall starts here, in this process, just before the first
		// socket call: however long this program took to start, the call
		// meets a stopped PID for at least the stall's length.
		if err := unix.Kill(stallPID, unix.SIGSTOP); err != nil {
			return err
		}
		resumed := make(chan struct{})
		go func() {
			// The stall counts from the moment a thread of this process
			// is in its socket call (a loaded machine may deschedule this
			// process for longer than the stall before it gets there).
			waitInSyscall(unix.SYS_SOCKET, 30*time.Second)
			time.Sleep(stall)
			unix.Kill(stallPID, unix.SIGCONT)
			close(resumed)
		}()
		defer func() { <-resumed }()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 1)
			if _, err := c.Read(b); err == nil {
				c.Write(b)
			}
			c.Close()
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			return err
		}
		b := []byte{1}
		if _, err := c.Write(b); err != nil {
			return err
		}
		if _, err := c.Read(b); err != nil {
			return err
		}
		c.Close()
	}
	fmt.Printf("%d round trips in %v\n", n, time.Since(start))
	return nil
}

// probeServeHTTP answers every request with "hello from http" until
// killed, after writing its address to file.
func probeServeHTTP(addr, file string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file+".tmp", []byte(l.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return err
	}
	return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from http\n")
	}))
}

// probeGuard tries, against pid and then against itself (0), each change
// the sandbox refuses for another process: one line each, "NAME refused
// (ERRNO)" or "NAME DONE". A queued SIGSEGV to itself is not tried. Last,
// setpriority of its own pid and of its parent's.
func probeGuard(pidArg string) int {
	pid, err := strconv.Atoi(pidArg)
	if err != nil {
		fmt.Fprintln(os.Stderr, probeUsage)
		return 2
	}
	for _, target := range []int{pid, 0} {
		who := "pid " + pidArg
		if target == 0 {
			who = "self"
		}
		report := func(name string, e error) {
			if e != nil {
				fmt.Printf("%s %s refused (%v)\n", who, name, e)
			} else {
				fmt.Printf("%s %s DONE\n", who, name)
			}
		}
		var old unix.Rlimit
		if e := unix.Prlimit(target, unix.RLIMIT_FSIZE, nil, &old); e == nil {
			report("prlimit", unix.Prlimit(target, unix.RLIMIT_FSIZE, &old, nil))
		} else {
			report("prlimit(read)", e)
		}
		var set unix.CPUSet
		if e := unix.SchedGetaffinity(target, &set); e == nil {
			report("sched_setaffinity", unix.SchedSetaffinity(target, &set))
		} else {
			report("sched_getaffinity", e)
		}
		prio, e := unix.Getpriority(unix.PRIO_PROCESS, target)
		if e == nil {
			// getpriority returns 20 - nice.
			report("setpriority", unix.Setpriority(unix.PRIO_PROCESS, target, 20-prio))
		} else {
			report("getpriority", e)
		}
		_, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, 1, uintptr(target), 0)
		report("ioprio_set", errnoOrNil(errno))
		param := [1]int32{0}
		_, _, errno = unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(target), 0, uintptr(unsafe.Pointer(&param[0])))
		report("sched_setscheduler", errnoOrNil(errno))
		if target != 0 {
			var info [128]byte
			*(*int32)(unsafe.Pointer(&info[0])) = int32(unix.SIGSEGV)
			*(*int32)(unsafe.Pointer(&info[8])) = -1 // SI_QUEUE
			_, _, errno = unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(target), uintptr(unix.SIGSEGV), uintptr(unsafe.Pointer(&info[0])))
			report("rt_sigqueueinfo(SIGSEGV)", errnoOrNil(errno))
			_, _, errno = unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(target), uintptr(target), uintptr(unix.SIGBUS), uintptr(unsafe.Pointer(&info[0])), 0, 0)
			report("rt_tgsigqueueinfo(SIGBUS)", errnoOrNil(errno))
			// An I/O signal: F_SETOWN names the target, F_SETSIG a fault
			// signal, which the kernel would send with si_code SI_SIGIO.
			var p [2]int
			if e := unix.Pipe2(p[:], unix.O_CLOEXEC); e == nil {
				_, e1 := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, target)
				_, e2 := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGSEGV))
				if e1 != nil {
					e2 = e1
				}
				report("fcntl(F_SETSIG, SIGSEGV)", e2)
				unix.Close(p[0])
				unix.Close(p[1])
			}
			if fd, e := unix.PidfdOpen(target, 0); e == nil {
				_, _, errno = unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(unix.SIGFPE), uintptr(unsafe.Pointer(&info[0])), 0, 0, 0)
				report("pidfd_send_signal(SIGFPE, siginfo)", errnoOrNil(errno))
				unix.Close(fd)
			}
		}
	}
	// Its own priority by its pid spelled out (CPython's os.setpriority(
	// PRIO_PROCESS, os.getpid(), ...)), then its parent's (a shell).
	for _, t := range []struct {
		who  string
		pid  int
		nice int
	}{{"own", os.Getpid(), 1}, {"parent", os.Getppid(), 2}} {
		if t.pid <= 1 {
			continue
		}
		if e := unix.Setpriority(unix.PRIO_PROCESS, t.pid, t.nice); e != nil {
			fmt.Printf("%s setpriority refused (%v)\n", t.who, e)
			continue
		}
		prio, e := unix.Getpriority(unix.PRIO_PROCESS, t.pid)
		fmt.Printf("%s setpriority DONE (nice %d, %v)\n", t.who, 20-prio, e)
	}
	return 0
}

// probeIDs prints, for each change of ids and each chown of file, to the
// caller's own ids and to others', "NAME ok" or "NAME ERRNO". Raw
// syscalls: they change only this thread, and only with the caller's own.
func probeIDs(file string) int {
	uid, gid := unix.Getuid(), unix.Getgid()
	otherUID, otherGID := 0, 0
	if uid == 0 {
		otherUID = 1
	}
	if gid == 0 {
		otherGID = 1
	}
	keep := -1
	say := func(name string, e unix.Errno) {
		if e == 0 {
			fmt.Println(name, "ok")
		} else {
			fmt.Println(name, unix.ErrnoName(e))
		}
	}
	sys := func(trap uintptr, a ...int) unix.Errno {
		args := [3]uintptr{}
		for i, v := range a {
			args[i] = uintptr(v)
		}
		_, _, e := unix.RawSyscall(trap, args[0], args[1], args[2])
		return e
	}
	chown := func(u, g int) unix.Errno {
		if err := unix.Chown(file, u, g); err != nil {
			return err.(unix.Errno)
		}
		return 0
	}
	say("chown-own", chown(uid, gid))
	say("chown-keep", chown(keep, keep))
	say("chown-other-uid", chown(otherUID, keep))
	say("chown-other-gid", chown(keep, otherGID))
	say("setresuid-own", sys(unix.SYS_SETRESUID, uid, uid, uid))
	say("setuid-other", sys(unix.SYS_SETUID, otherUID))
	say("setgid-other", sys(unix.SYS_SETGID, otherGID))
	say("setreuid-other", sys(unix.SYS_SETREUID, keep, otherUID))
	say("setresgid-other", sys(unix.SYS_SETRESGID, keep, keep, otherGID))
	return 0
}

func errnoOrNil(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// probeUnixEcho serves on the Unix socket addr and reaches it, in one
// process: under restrict_network a child's listen and connect both go
// through the supervisor.
func probeUnixEcho(addr string) error {
	l, err := net.Listen("unix", addr)
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Printf("name %s\n", l.Addr())
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			done <- err
			return
		}
		_, err = c.Write(buf)
		done <- err
	}()
	c, err := net.DialTimeout("unix", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	fmt.Print(string(buf))
	return nil
}

// probeUnixStale connects to a socket file whose socket is closed.
func probeUnixStale(path string) error {
	os.Remove(path)
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Bind(s, &unix.SockaddrUnix{Name: path}); err != nil {
		return err
	}
	unix.Close(s)
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(c)
	err = unix.Connect(c, &unix.SockaddrUnix{Name: path})
	fmt.Printf("stale: %v\n", err)
	return nil
}

// probeUnixHold listens with a full backlog and never accepts.
func probeUnixHold(path, ready string) error {
	os.Remove(path)
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Bind(s, &unix.SockaddrUnix{Name: path}); err != nil {
		return err
	}
	if err := unix.Listen(s, 0); err != nil {
		return err
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		return err
	}
	for {
		time.Sleep(time.Hour)
	}
}

// probeUnixFill makes n blocking connects at once (Go's own are
// non-blocking) and waits to be killed.
func probeUnixFill(path string, n int) error {
	for range n {
		go func() {
			c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				_ = unix.Connect(c, &unix.SockaddrUnix{Name: path})
			}
		}()
	}
	for {
		time.Sleep(time.Hour)
	}
}

// waitInSyscall waits, at most limit, until a thread of this process is
// inside system call nr (/proc/self/task/TID/syscall).
func waitInSyscall(nr uintptr, limit time.Duration) {
	want := strconv.Itoa(int(nr)) + " "
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(time.Millisecond) {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			if b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/syscall"); err == nil && strings.HasPrefix(string(b), want) {
				return
			}
		}
	}
}
