package childnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/initproc"
	"grok-sandbox/launcher/sandboxinit/violations"
	"grok-sandbox/launcher/seccomp"
)

// HelperArg is the init stage's argument that runs the net helper.
const HelperArg = "--net-helper"

// childFamily: the families children may have private sockets of.
var childFamily = seccomp.ChildFamily

// helperMakes reports whether the net helper makes a socket of this kind:
// the children's kinds, and the sock_diag socket the supervisor asks for
// itself (Net.diag), which no child is given.
func helperMakes(domain, typ, proto int) bool {
	if domain == unix.AF_NETLINK && proto == unix.NETLINK_SOCK_DIAG {
		return true
	}
	return childFamily(domain, proto) && (domain != unix.AF_UNIX || isUnixStream(typ) || seccomp.UnixDatagramType(typ))
}

// Helper is the children's private namespace, made by PrepareHelper while
// the init stage still holds the capabilities for it (CAP_SYS_ADMIN to
// unshare, CAP_NET_ADMIN to bring lo up), on a thread that keeps it. That
// thread then makes the children's sockets itself (Serve), or, in a build
// linked with cgo, starts the net helper process that does (Start).
type Helper struct {
	sp   [2]int
	do   chan helperMode
	errc chan error
	reqs chan socketCall
}

// helperMode is what the namespace's thread does once Start or Serve says.
type helperMode int

const (
	startProcess   helperMode = iota // drop this thread's capabilities, then start the helper process
	serveInProcess                   // make the children's sockets itself, for good
)

// socketCall is one socket asked of the namespace's thread (Serve).
type socketCall struct {
	domain, typ, proto int
	reply              chan socketResult
}

type socketResult struct {
	fd  int
	err error
}

// inProcess is the namespace's thread serving in this process (Serve),
// when it does: Open uses it instead of a helper process.
var inProcess *Helper

// PrepareHelper makes the namespace on a thread of its own, which then
// waits for Start.
func PrepareHelper() (*Helper, error) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %v", err)
	}
	h := &Helper{sp: [2]int{sp[0], sp[1]}, do: make(chan helperMode), errc: make(chan error, 1)}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the goroutine ends locked, and its thread, still
		// in the private namespace, ends with it.
		runtime.LockOSThread()
		// Closed through its os.File only: a finalizer would close the
		// number again, whatever it names by then.
		f := os.NewFile(uintptr(sp[1]), "net-helper")
		defer f.Close()
		err := unix.Unshare(unix.CLONE_NEWNET)
		if err != nil {
			err = fmt.Errorf("unshare(CLONE_NEWNET): %v", err)
		} else {
			err = loopbackUp()
		}
		ready <- err
		if err != nil {
			return
		}
		mode := <-h.do
		if mode == serveInProcess {
			f.Close()
			unix.Close(sp[0])
			h.errc <- nil
			serve(h.reqs)
			return
		}
		h.errc <- func() error {
			if err := initproc.DropCapabilities(); err != nil {
				return err
			}
			cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"grok-sandbox", initcfg.Command, HelperArg},
				Env: []string{}, Stderr: os.Stderr, ExtraFiles: []*os.File{f}}
			return initproc.StartClean(cmd)
		}()
	}()
	if err := <-ready; err != nil {
		unix.Close(sp[0])
		return nil, err
	}
	return h, nil
}

// Start starts the helper process, for a build linked with cgo, which
// execs itself again after the masks (ending the namespace's thread): the
// thread drops every capability and starts it. It leaves the supervisor's
// end of their socket pair on initcfg.FDNetHelper (not close-on-exec: it
// must survive that re-exec).
func (h *Helper) Start() error {
	h.do <- startProcess
	if err := <-h.errc; err != nil {
		unix.Close(h.sp[0])
		return err
	}
	if err := initproc.PlaceFD(h.sp[0], initcfg.FDNetHelper); err != nil {
		return err
	}
	helperPlaced = true
	return nil
}

// helperPlaced: initcfg.FDNetHelper is the helper's channel (Start put it
// there, or AdoptHelper found it at the start of the re-exec). Only then:
// by the time the supervisor asks, a descriptor of the init stage's own
// may have taken the number.
var helperPlaced bool

// AdoptHelper tells the init stage's re-exec that it began with the
// helper's channel on initcfg.FDNetHelper (Start put it there before).
func AdoptHelper() { helperPlaced = true }

// Serve makes the namespace's thread, once no thread of this process holds
// a capability (initproc.DropCapabilitiesEverywhere), make the children's
// sockets itself for the rest of the run: no helper process to start, to
// wait on for each socket, or to end. Open then uses it.
func (h *Helper) Serve() error {
	h.reqs = make(chan socketCall)
	h.do <- serveInProcess
	if err := <-h.errc; err != nil {
		return err
	}
	inProcess = h
	return nil
}

// serve answers calls with a socket of the calling thread's namespace,
// of the kinds the helper process makes, close-on-exec.
func serve(calls <-chan socketCall) {
	for c := range calls {
		if !helperMakes(c.domain, c.typ, c.proto) {
			c.reply <- socketResult{-1, unix.EACCES}
			continue
		}
		s, err := unix.Socket(c.domain, c.typ|unix.SOCK_CLOEXEC, c.proto)
		if err != nil {
			if _, ok := err.(unix.Errno); !ok {
				err = unix.EACCES
			}
			c.reply <- socketResult{-1, err}
			continue
		}
		c.reply <- socketResult{s, nil}
	}
}

// Ready reports whether the children's namespace is there to Open: served
// in this process, or by a helper on initcfg.FDNetHelper.
func Ready() bool {
	if inProcess != nil {
		return true
	}
	if !helperPlaced {
		return false
	}
	_, err := unix.FcntlInt(uintptr(initcfg.FDNetHelper), unix.F_GETFD, 0)
	return err == nil
}

// loopbackUp sets IFF_UP on lo in the calling thread's network namespace.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %v", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %v", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %v", err)
	}
	return nil
}

// RunHelper is the helper: it makes each socket asked for on fd 3 (a
// request is three little-endian int32s: domain, type, protocol) and sends
// it back with a 4-byte errno (0: the socket rides along).
func RunHelper() int {
	initproc.ShrugSignals()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: net helper: %v\n", err)
		return initcfg.ExitRefused
	}
	if err := initproc.VerifyThread(1, true); err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: net helper: %v\n", err)
		return initcfg.ExitRefused
	}
	const fd = 3
	unix.CloseOnExec(fd)
	// What the init stage holds (its config, the event log, its
	// executable) never reached the helper (initproc.StartClean).
	for {
		var req [12]byte
		n, err := unix.Read(fd, req[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0
		}
		var reply [4]byte
		var oob []byte
		s := -1
		domain := int(int32(binary.LittleEndian.Uint32(req[0:])))
		typ := int(int32(binary.LittleEndian.Uint32(req[4:])))
		proto := int(int32(binary.LittleEndian.Uint32(req[8:])))
		if n != len(req) || !helperMakes(domain, typ, proto) {
			binary.LittleEndian.PutUint32(reply[:], uint32(unix.EACCES))
		} else if s, err = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto); err != nil {
			errno, _ := err.(unix.Errno)
			if errno == 0 {
				errno = unix.EACCES
			}
			binary.LittleEndian.PutUint32(reply[:], uint32(errno))
		} else {
			oob = unix.UnixRights(s)
		}
		err = unix.Sendmsg(fd, reply[:], oob, nil, 0)
		if s >= 0 {
			unix.Close(s)
		}
		if err != nil {
			return 0
		}
	}
}

// Net is the supervisor's side: the helper's channel and the private
// namespace's cookie (Open).
type Net struct {
	mu sync.Mutex
	fd int
	// clients names the child behind each connection it made to the
	// children's loopback, by its local port, so that the proxy can name
	// the program it refuses (its TCP clients look all alike).
	clients   sync.Map // uint16 port -> [2]string{comm, exe}, for connects to the proxy
	proxyPort atomic.Int32
	cookie    uint64
	arch      seccomp.Arch
	warn      sync.Once
	broken    atomic.Bool
	stalled   bool          // the helper missed a deadline: never asked again (under mu)
	slow      time.Duration // the helper's slow answers, added up (under mu)
	// calls reaches the namespace's thread of this process (Helper.Serve),
	// when it serves; else fd is the helper process's channel.
	calls chan<- socketCall
	// sockets queues the children's socket calls for socketWorker.
	sockets     chan socketRequest
	startWorker sync.Once
	// spares are sockets of the kinds children asked for, made ahead by
	// the namespace's thread of this process (see takeSpare).
	sparesMu    sync.Mutex
	spares      map[sockKind]chan int
	refill      chan sockKind
	startRefill sync.Once
	// diag is a sock_diag socket of the children's namespace, asked for
	// once (Open), so that no check of a Unix connect waits on the net
	// helper; bound records the socket files the children's sockets were
	// bound to (unixsock_linux.go).
	diag    int
	diagMu  sync.Mutex
	diagSeq uint32
	boundMu sync.Mutex
	bound   map[vfsID]uint32
	// sends: the children's sends that can carry an address reach this
	// process (seccomp.Rules.SendNotify), which makes them
	// (send_linux.go); only then do they get Unix datagram sockets.
	sends bool
}

// MakeSends tells c that the children's filter sends it their sendto
// with an address, sendmsg and sendmmsg (seccomp.Rules.SendNotify), to
// make itself; before the command starts.
func (c *Net) MakeSends() { c.sends = true }

// Open checks the helper left on initcfg.FDNetHelper: it answers, and its
// sockets are of a namespace other than this process's.
func Open(arch seccomp.Arch) (*Net, error) {
	c := &Net{fd: -1, arch: arch, sockets: make(chan socketRequest, 1024)}
	if inProcess != nil {
		c.calls = inProcess.reqs
	} else {
		if !helperPlaced {
			return nil, errors.New("the net helper did not start")
		}
		if _, err := unix.FcntlInt(uintptr(initcfg.FDNetHelper), unix.F_GETFD, 0); err != nil {
			return nil, errors.New("the net helper did not start")
		}
		unix.CloseOnExec(initcfg.FDNetHelper)
		c.fd = initcfg.FDNetHelper
	}
	s, err := c.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("the net helper: %v", err)
	}
	defer unix.Close(s)
	if c.cookie, err = netnsCookie(s); err != nil {
		return nil, fmt.Errorf("SO_NETNS_COOKIE: %v", err)
	}
	own, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(own)
	if host, err := netnsCookie(own); err != nil || host == c.cookie {
		return nil, errors.New("the net helper's sockets are not in a namespace of their own")
	}
	// Without it the children's path connects are refused (fail closed).
	c.diag = -1
	if d, err := c.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG); err == nil {
		c.diag = d
	}
	return c, nil
}

func netnsCookie(fd int) (uint64, error) {
	var v uint64
	l := uint32(unsafe.Sizeof(v))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_NETNS_COOKIE, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return v, nil
}

// Socket asks the helper for a socket of the children's namespace. An unix.Errno is the socket call's
// own failure; any other error means the helper is gone.
func (c *Net) Socket(domain, typ, proto int) (int, error) {
	if c.calls != nil {
		reply := make(chan socketResult, 1)
		c.calls <- socketCall{domain, typ, proto, reply}
		r := <-reply
		return r.fd, r.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stalled {
		return -1, errors.New("net helper: it stopped answering")
	}
	var req [12]byte
	binary.LittleEndian.PutUint32(req[0:], uint32(int32(domain)))
	binary.LittleEndian.PutUint32(req[4:], uint32(int32(typ)))
	binary.LittleEndian.PutUint32(req[8:], uint32(int32(proto)))
	if _, err := unix.Write(c.fd, req[:]); err != nil {
		return -1, fmt.Errorf("net helper: %v", err)
	}
	var reply [4]byte
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		// A bounded wait: the helper runs as the children's user, so a
		// child can stop it (SIGSTOP), and the supervisor must not wait
		// for it with every other call, the command's included, queued
		// behind. A late answer would be taken for the next request's:
		// the helper is not asked again.
		// Slow answers add up to the same bound: a child that stops
		// the helper for a little less than it around every call costs
		// the run that much once, not at every call.
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
		began := time.Now()
		k, err := unix.Poll(pfd, helperTimeoutMs)
		if err == unix.EINTR {
			continue
		}
		if d := time.Since(began); d > helperSlow {
			c.slow += d
		}
		if err != nil || k == 0 || c.slow > helperTimeoutMs*time.Millisecond {
			c.stalled = true
			return -1, fmt.Errorf("net helper: no answer within %d ms (stopped or killed by a child?)", helperTimeoutMs)
		}
		n, oobn, _, _, err := unix.Recvmsg(c.fd, reply[:], oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != len(reply) {
			return -1, fmt.Errorf("net helper: no answer (%v)", err)
		}
		if errno := binary.LittleEndian.Uint32(reply[:]); errno != 0 {
			return -1, unix.Errno(errno)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return -1, errors.New("net helper: no socket in the answer")
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return -1, errors.New("net helper: no socket in the answer")
		}
		return fds[0], nil
	}
}

// helperTimeoutMs bounds the wait for the net helper's answer, and the
// answers slower than helperSlow, added up.
const (
	helperTimeoutMs = 2000
	helperSlow      = 100 * time.Millisecond
)

// fail turns the private loopback off for good, with a warning: children
// get no socket from now on.
func (c *Net) fail(why string) {
	c.warn.Do(func() {
		c.broken.Store(true)
		fmt.Fprintf(os.Stderr, "grok-sandbox: warning: %s; processes started by the wrapped command now get no network at all\n", why)
	})
}

// Handle answers a child's network call (see the package comment); false
// leaves it to be refused. v logs what it refuses.
func (c *Net) Handle(n seccomp.Notification, r seccomp.Reply, v *violations.Log) bool {
	name := seccomp.SyscallName(c.arch, n.Nr)
	if c.sends && (name == "sendto" || name == "sendmsg" || name == "sendmmsg") {
		// Made here even when the private namespace failed: sends on
		// socket pairs and on what the command handed down go on.
		c.onSend(n, r, v)
		return true
	}
	if c.broken.Load() {
		return false
	}
	switch name {
	case "socket":
		domain, typ, proto := int(int32(n.Args[0])), int(int32(n.Args[1])), int(int32(n.Args[2]))
		if !childFamily(domain, proto) || domain == unix.AF_UNIX && !isUnixStream(typ) && !(c.sends && seccomp.UnixDatagramType(typ)) {
			return false
		}
		// Answered by the socket worker: the net helper's answer is a
		// round trip, and a child that slows the helper (SIGSTOP, SIGCONT)
		// must not hold the supervisor's loop, which answers the command's
		// own calls too. Nor may installing a socket made ahead: the ioctl
		// waits until the caller's thread runs to take it, and a child can
		// make itself slow to run (SCHED_IDLE beside busy loops: seconds).
		// A bounded queue: beyond it EAGAIN.
		c.startWorker.Do(func() { go c.socketWorker(v) })
		select {
		case c.sockets <- socketRequest{n: n, r: r, domain: domain, typ: typ, proto: proto}:
		default:
			_ = r.Return(0, unix.EAGAIN)
		}
		return true
	case "bind", "connect", "listen", "sendto":
		return c.onSocket(n, r, v)
	case "setsockopt":
		c.onPassCred(n, r, v)
		return true
	}
	return false
}

// onPassCred answers a child's setsockopt(SOL_SOCKET, SO_PASSCRED or
// SO_PASSPIDFD): made here, on a copy of its descriptor with a copy of its
// value, for a socket of the children's namespace or a stream socket;
// refused (EPERM, logged) for any other socket, such as a seqpacket
// socketpair, which the kernel makes in the host's namespace: its next
// send would bind an automatic abstract name of the host's, and those are
// few and shared. (A stream socket binds one only on connect, which is
// refused for the host's.)
func (c *Net) onPassCred(n seccomp.Notification, r seccomp.Reply, v *violations.Log) {
	sock, err := c.fetch(n, r)
	if err != nil || sock < 0 {
		if err == unix.EAGAIN {
			_ = r.Return(0, unix.EAGAIN)
		} else if err != nil {
			_ = r.Return(0, unix.EBADF)
		} else if r.Valid() {
			// The caller is still there: it must not wait for ever.
			_ = r.Return(0, unix.EAGAIN)
		}
		return
	}
	defer dropFD(sock)
	private, err := c.private(sock)
	if errors.Is(err, unix.ENOTSOCK) {
		_ = r.Return(0, unix.ENOTSOCK)
		return
	}
	if !private {
		typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil || typ != unix.SOCK_STREAM {
			opt := "SO_PASSCRED"
			if int32(n.Args[2]) != unix.SO_PASSCRED {
				opt = "SO_PASSPIDFD"
			}
			v.RecordMsg(n, fmt.Sprintf("refused %s on a socket of the host's network namespace (a Unix socketpair): its next send would bind an automatic abstract name of the host's", opt))
			_ = r.Return(0, unix.EPERM)
			return
		}
	}
	// The kernel reads an int and refuses less.
	if int32(n.Args[4]) < 4 {
		_ = r.Return(0, unix.EINVAL)
		return
	}
	var val [4]byte
	if n.Args[3] == 0 || !vmRead(n.Pid, uintptr(n.Args[3]), val[:]) {
		_ = r.Return(0, unix.EFAULT)
		return
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(sock), uintptr(int32(n.Args[1])), uintptr(int32(n.Args[2])), uintptr(unsafe.Pointer(&val[0])), 4, 0)
	_ = r.Return(0, e)
}

// vmRead copies len(buf) bytes at addr out of process pid's memory, whole
// or not at all.
func vmRead(pid int, addr uintptr, buf []byte) bool {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	got, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return err == nil && got == len(buf)
}

// socketRequest is a child's socket call waiting for the net helper.
type socketRequest struct {
	n                  seccomp.Notification
	r                  seccomp.Reply
	domain, typ, proto int
}

// socketWorker answers the children's socket calls, one at a time (the
// helper answers one at a time anyway). A call that is no longer pending
// (its caller took a signal: the kernel restarts it as a new notification)
// is dropped without asking the helper.
func (c *Net) socketWorker(v *violations.Log) {
	for q := range c.sockets {
		if !q.r.Valid() {
			continue
		}
		if s, ok := c.takeSpare(q.domain, q.typ, q.proto); ok {
			if !c.install(q.r, s, q.typ) {
				v.Record(q.n)
				_ = q.r.Return(0, unix.EACCES)
			}
			continue
		}
		if !c.giveSocket(q.r, q.domain, q.typ, q.proto) {
			v.Record(q.n)
			_ = q.r.Return(0, unix.EACCES)
		}
	}
}

// giveSocket installs a socket of the children's namespace as the result of
// r's socket call; false leaves the call to be refused.
func (c *Net) giveSocket(r seccomp.Reply, domain, typ, proto int) bool {
	s, err := c.Socket(domain, typ&^unix.SOCK_CLOEXEC, proto)
	var errno unix.Errno
	if errors.As(err, &errno) {
		_ = r.Return(0, errno)
		return true
	}
	if err != nil {
		c.fail(err.Error())
		return false
	}
	return c.install(r, s, typ)
}

// install installs s, a socket of the children's namespace, as the result
// of r's socket call made with type typ, and closes it here; false leaves
// the call to be refused.
func (c *Net) install(r seccomp.Reply, s, typ int) bool {
	defer unix.Close(s)
	_, err := r.InstallFD(s, typ&unix.SOCK_CLOEXEC != 0)
	switch err {
	case nil, unix.ENOENT, unix.ESRCH:
		// Done, or the caller is gone.
		return true
	case unix.EINVAL, unix.ENOTTY, unix.EOPNOTSUPP, unix.ENOSYS:
		c.fail(fmt.Sprintf("cannot give children sockets of their own (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND, Linux 5.14: %v)", err))
		return false
	case unix.EINPROGRESS, unix.EBUSY:
		// The notification is no longer ours to answer.
		return true
	}
	return false
}

// sockKind is a socket call's domain, type and protocol, the type without
// its flags.
type sockKind struct{ domain, typ, proto int }

// maxSpares is how many sockets of one kind are kept made ahead, for at
// most maxSpareKinds kinds (the first asked for).
const (
	maxSpares     = 4
	maxSpareKinds = 16
)

// takeSpare returns a socket of the children's namespace made ahead, of
// the kind asked for (domain, typ with its flags, proto), O_NONBLOCK as
// SOCK_NONBLOCK asks; ok is false when there is none, and the call then
// goes to the namespace's thread as before. A fresh socket nobody else
// holds is the same whenever it was made: the namespace's thread makes it
// with the same call, and a socket keeps no trace of its maker's thread.
// Only where that thread serves in this process (not a helper process,
// which a child can stop): the first call of each kind makes the thread
// keep maxSpares of that kind, and each one taken is made again, off the
// caller's wait. For the socket worker only (see Handle).
func (c *Net) takeSpare(domain, typ, proto int) (int, bool) {
	if c.calls == nil {
		return -1, false
	}
	k := sockKind{domain, typ &^ (unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK), proto}
	c.sparesMu.Lock()
	ch, ok := c.spares[k]
	if !ok {
		if c.spares == nil {
			c.spares = map[sockKind]chan int{}
		}
		if len(c.spares) >= maxSpareKinds {
			c.sparesMu.Unlock()
			return -1, false
		}
		ch = make(chan int, maxSpares)
		c.spares[k] = ch
	}
	c.sparesMu.Unlock()
	c.startRefill.Do(func() {
		c.refill = make(chan sockKind, 64)
		go c.refillSpares()
	})
	s := -1
	select {
	case s = <-ch:
	default:
	}
	select {
	case c.refill <- k:
	default: // refills are queued already
	}
	if s < 0 {
		return -1, false
	}
	if typ&unix.SOCK_NONBLOCK != 0 {
		if err := unix.SetNonblock(s, true); err != nil {
			unix.Close(s)
			return -1, false
		}
	}
	return s, true
}

// refillSpares makes sockets ahead, up to maxSpares of each kind asked for.
// A kind whose socket call fails is not made ahead again.
func (c *Net) refillSpares() {
	for k := range c.refill {
		c.sparesMu.Lock()
		ch := c.spares[k]
		c.sparesMu.Unlock()
		for len(ch) < cap(ch) {
			s, err := c.Socket(k.domain, k.typ, k.proto)
			if err != nil {
				c.sparesMu.Lock()
				c.spares[k] = make(chan int) // never holds one
				c.sparesMu.Unlock()
				// Those made before stay with no one to take them.
				for drained := false; !drained; {
					select {
					case s := <-ch:
						unix.Close(s)
					default:
						drained = true
					}
				}
				break
			}
			select {
			case ch <- s:
			default:
				unix.Close(s)
			}
		}
	}
}

// onSocket handles bind, connect, listen and sendto with an address.
func (c *Net) onSocket(n seccomp.Notification, r seccomp.Reply, v *violations.Log) bool {
	name := seccomp.SyscallName(c.arch, n.Nr)
	sock, err := c.fetch(n, r)
	if err == unix.EAGAIN {
		_ = r.Return(0, unix.EAGAIN) // descriptors wait to be closed (closer.go)
		return true
	}
	if err != nil {
		if err == unix.ENOSYS {
			c.fail("cannot read children's sockets (pidfd_getfd, Linux 5.6)")
		}
		v.RecordMsg(n, fmt.Sprintf("blocked %s%s: processes started by the wrapped command reach only their private loopback", name, c.destination(n)))
		_ = r.Return(0, unix.EACCES)
		return true
	}
	if sock < 0 {
		return true // the caller is gone
	}
	private, _ := c.private(sock)
	if !private {
		dropFD(sock)
		// A connect to a socket path that does not exist (glibc's nscd
		// probe on every user lookup) is refused all the same, unlogged:
		// nothing was there to reach.
		if !(name == "connect" && violations.ConnectToMissingPath(n.Pid, n.Args[1], n.Args[2])) {
			msg := fmt.Sprintf("blocked %s%s: processes started by the wrapped command have no network but their private loopback (no host Unix socket)", name, c.destination(n))
			v.RecordMsg(n, msg)
		}
		_ = r.Return(0, unix.EACCES)
		return true
	}
	switch name {
	case "listen":
		err := unix.Listen(sock, int(int32(n.Args[1])))
		dropFD(sock)
		_ = r.Return(0, errnoOf(err))
		return true
	case "sendto":
		// The socket is one of the private namespace's: wherever the
		// address points, nothing outside is reached. A descriptor
		// swapped meanwhile could only be another of the child's:
		// private, a Unix stream socket (which ignores or refuses an
		// address) or one the command handed down (whose sendmsg no
		// filter sees anyway).
		dropFD(sock)
		_ = r.Continue()
		return true
	}
	addr, errno := c.readAddr(n)
	if errno != 0 {
		dropFD(sock)
		if r.Valid() {
			_ = r.Return(0, errno)
		}
		return true
	}
	if !r.Valid() {
		dropFD(sock)
		return true
	}
	kind := unixAddr(addr)
	if name == "bind" {
		var err error
		if kind == "/" {
			// A path: made as the child would make it (unixsock_linux.go).
			err = c.bindPath(n.Pid, sock, addr)
		} else {
			err = rawSockaddrCall(unix.SYS_BIND, sock, addr)
		}
		dropFD(sock)
		_ = r.Return(0, errnoOf(err))
		return true
	}
	connect := func() error { return rawSockaddrCall(unix.SYS_CONNECT, sock, addr) }
	release := func() {}
	if kind == "/" {
		// A path: only to a socket file that a socket of the children's
		// namespace is bound to, through a descriptor of that file.
		typ, _ := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
		target, errno := c.unixTarget(n, addr, v, typ == unix.SOCK_DGRAM)
		if errno != 0 {
			dropFD(sock)
			_ = r.Return(0, errno)
			return true
		}
		connect = func() error { return connectThrough(sock, target) }
		release = func() { unix.Close(target) }
	}
	ap, inet := inetAddr(addr)
	if inet && !ap.Addr().IsLoopback() && !ap.Addr().IsUnspecified() {
		dropFD(sock)
		v.RecordMsg(n, fmt.Sprintf("blocked connect to %s: processes started by the wrapped command reach only their private loopback", ap))
		_ = r.Return(0, unix.EACCES)
		return true
	}
	// A blocking connect may take a while (a full backlog): answer from a
	// goroutine, so the other children are served meanwhile. A bounded
	// number at once (each holds a thread of this process): beyond it the
	// call fails with EAGAIN rather than let children exhaust pid 1.
	select {
	case connecting <- struct{}{}:
	default:
		dropFD(sock)
		release()
		_ = r.Return(0, unix.EAGAIN)
		return true
	}
	comm, exe := "", ""
	if inet && ap.Addr().IsLoopback() && int32(ap.Port()) == c.proxyPort.Load() {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.Pid)); err == nil {
			comm = strings.TrimSpace(string(b))
		}
		exe = violations.ExeOf(fmt.Sprintf("/proc/%d", n.Pid))
	}
	go func() {
		defer func() { <-connecting }()
		defer dropFD(sock)
		defer release()
		// Bounded: a blocking connect to a full backlog would otherwise
		// hold this slot for as long as the listener lives, after the
		// child that asked is gone. Where the caller waits through its
		// signals (the listener is killable-only, see send_linux.go), a
		// signal it would take ends the wait as the kernel's own would:
		// the call restarts, or fails with EINTR.
		var interrupted unix.Errno
		var sig seccomp.SignalWatch
		pending := func() bool {
			if !r.Valid() {
				return false
			}
			if c.sends {
				if interrupted = sig.Check(n.Pid); interrupted != 0 {
					return false
				}
			}
			return true
		}
		err := boundedConnect(sock, connect, pending)
		if interrupted != 0 {
			_ = r.Return(0, interrupted)
			return
		}
		// The local port is chosen by now, and the child has written
		// nothing yet (it is still blocked in connect): the proxy finds
		// the name when it reads the request.
		if comm != "" {
			if la, err := unix.Getsockname(sock); err == nil && localPort(la) != 0 {
				c.clients.Store(localPort(la), [2]string{comm, exe})
			}
		}
		refusedMsg := fmt.Sprintf("connect to %s refused: nothing listens there on the children's private loopback (the host's loopback is not theirs)", ap)
		if kind == "@" {
			refusedMsg = fmt.Sprintf("connect to %s refused: nothing listens there among the children's own abstract names (the host's are not theirs)", sockaddrString(addr))
		}
		// Logged before the answer where it can be: once the child has it,
		// the run may end before a line queued later is written. A
		// non-blocking connect on loopback ends within microseconds: wait
		// for that a little (POLLERR, without taking the error from the
		// child's SO_ERROR), and longer after answering.
		ended := func(ms int) (done, refused bool) {
			fds := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLOUT}}
			k, err := unix.Poll(fds, ms)
			if err != nil || k != 1 {
				return false, false
			}
			return true, fds[0].Revents&unix.POLLERR != 0
		}
		done, refused := true, (inet || kind == "@") && err == unix.ECONNREFUSED
		if inet && err == unix.EINPROGRESS {
			done, refused = ended(100)
		}
		if refused {
			v.RecordMsg(n, refusedMsg)
		}
		_ = r.Return(0, errnoOf(err))
		if !done {
			if _, refused := ended(2000); refused {
				v.RecordMsg(n, refusedMsg)
			}
		}
	}()
	// Handle runs off the supervisor's loop (seccomp.SuperviseChildren),
	// in a goroutine that ends here: the connect goroutine runs next on
	// this thread, at once.
	return true
}

// connecting bounds the connects in flight.
var connecting = make(chan struct{}, 256)

// fetch copies the child's descriptor Args[0] into this process; -1 with
// no error when the caller is gone.
func (c *Net) fetch(n seccomp.Notification, r seccomp.Reply) (int, error) {
	if backlogged() {
		return -1, unix.EAGAIN
	}
	pidfd, _, ok := callerPidfd(n, r, false)
	if !ok {
		if r.Valid() {
			// Still there: no pidfd (this process out of descriptors?).
			return -1, unix.EAGAIN
		}
		return -1, nil
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, int(int32(n.Args[0])), 0)
	if err != nil {
		switch err {
		case unix.ENOSYS:
			return -1, err
		case unix.EMFILE, unix.ENFILE:
			return -1, unix.EAGAIN
		}
		return -1, unix.EBADF
	}
	noteCopies(1)
	unix.CloseOnExec(fd)
	return fd, nil
}

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd of the thread itself,
// whose pidfd_getfd reads that thread's descriptor table.
const pidfdThread = unix.O_EXCL

// callerPidfd is a pidfd of n's caller, for pidfd_getfd: of the calling
// thread where the kernel has them (a thread that unshared its descriptor
// table has its own, and a process whose first thread ended has none
// there), else of its process; and, with withTgid (or where it was needed
// for the pidfd), the caller's process id, else 0: reading it has the
// kernel format a status file. ok is false when the caller is gone.
func callerPidfd(n seccomp.Notification, r seccomp.Reply, withTgid bool) (pidfd, tgid int, ok bool) {
	var err error
	if withTgid {
		if tgid, err = seccomp.Tgid(n.Pid); err != nil {
			return -1, 0, false
		}
	}
	pidfd, err = unix.PidfdOpen(n.Pid, pidfdThread)
	if err != nil {
		if tgid == 0 {
			if tgid, err = seccomp.Tgid(n.Pid); err != nil {
				return -1, 0, false
			}
		}
		if pidfd, err = unix.PidfdOpen(tgid, 0); err != nil {
			return -1, 0, false
		}
	}
	// Still pending: the caller was alive after the pidfd was opened, so
	// its id was still its own (an id is not reused while it lives) and
	// the pidfd is the caller's.
	if !r.Valid() {
		unix.Close(pidfd)
		return -1, 0, false
	}
	return pidfd, tgid, true
}

// private reports whether sock is a socket of the children's namespace,
// of a family they may use.
func (c *Net) private(sock int) (bool, error) {
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return false, err
	}
	proto, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err != nil {
		return false, err
	}
	if !childFamily(domain, proto) {
		return false, nil
	}
	cookie, err := netnsCookie(sock)
	return err == nil && cookie == c.cookie, err
}

// readAddr copies the sockaddr of bind or connect out of the caller's
// memory.
func (c *Net) readAddr(n seccomp.Notification) ([]byte, unix.Errno) {
	size := int(uint32(n.Args[2]))
	if size < 0 || size > int(unsafe.Sizeof(unix.RawSockaddrAny{})) {
		return nil, unix.EINVAL
	}
	buf := make([]byte, size)
	if size == 0 {
		return buf, 0
	}
	if !vmRead(n.Pid, uintptr(n.Args[1]), buf) {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// destination is " to ADDR" for a connect or sendto whose address can be
// read, for the event log; "" otherwise.
func (c *Net) destination(n seccomp.Notification) string {
	name := seccomp.SyscallName(c.arch, n.Nr)
	var ptr, size uint64
	switch name {
	case "connect":
		ptr, size = n.Args[1], n.Args[2]
	case "sendto":
		ptr, size = n.Args[4], n.Args[5]
	default:
		return ""
	}
	if ptr == 0 {
		return ""
	}
	addr, errno := c.readAddr(seccomp.Notification{Pid: n.Pid, Args: [6]uint64{0, ptr, size}})
	if errno != 0 {
		return ""
	}
	return " to " + sockaddrString(addr)
}

func rawSockaddrCall(nr uintptr, fd int, addr []byte) error {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(nr, uintptr(fd), uintptr(p), uintptr(len(addr)))
	runtime.KeepAlive(addr)
	if e != 0 {
		return e
	}
	return nil
}

func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}

// inetAddr parses a sockaddr_in or sockaddr_in6.
func inetAddr(b []byte) (netip.AddrPort, bool) {
	if len(b) < 2 {
		return netip.AddrPort{}, false
	}
	switch binary.LittleEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) < 8 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4])), true
	case unix.AF_INET6:
		if len(b) < 24 {
			return netip.AddrPort{}, false
		}
		a := netip.AddrFrom16([16]byte(b[8:24]))
		return netip.AddrPortFrom(a.Unmap(), binary.BigEndian.Uint16(b[2:4])), true
	}
	return netip.AddrPort{}, false
}

// sockaddrString shows a sockaddr for the event log.
func sockaddrString(b []byte) string {
	if ap, ok := inetAddr(b); ok {
		return ap.String()
	}
	if len(b) >= 2 && binary.LittleEndian.Uint16(b) == unix.AF_UNIX {
		path := b[2:]
		if len(path) > 0 && path[0] == 0 {
			return "unix:@" + trimNUL(path[1:])
		}
		return "unix:" + trimNUL(path)
	}
	if len(b) >= 2 {
		return "family " + strconv.Itoa(int(binary.LittleEndian.Uint16(b)))
	}
	return "?"
}

func trimNUL(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// SetProxyPort tells c the allow_hosts proxy's port on the children's
// loopback: c notes, by its local port, which child each connect there is
// for (Client), since the proxy's clients look all alike.
func (c *Net) SetProxyPort(port int) {
	c.proxyPort.Store(int32(port))
}

// Client is the program (its name and what it runs) of the child behind
// peer, the client's address of a connection to the proxy, as c noted it
// when it made the connect; once: ok is false afterwards, and when it
// cannot be told.
func (c *Net) Client(peer unix.Sockaddr) (who [2]string, ok bool) {
	v, ok := c.clients.LoadAndDelete(localPort(peer))
	if !ok {
		return [2]string{}, false
	}
	return v.([2]string), true
}

// localPort is the port of a socket address, 0 when it has none.
func localPort(sa unix.Sockaddr) uint16 {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return uint16(a.Port)
	case *unix.SockaddrInet6:
		return uint16(a.Port)
	}
	return 0
}

// AddressOf is the address n's connect, sendto or bind names, and its
// family, read from the caller ("" when there is none or it cannot be
// read).
func (c *Net) AddressOf(n seccomp.Notification) (address, family string) {
	var ptr, size uint64
	switch seccomp.SyscallName(c.arch, n.Nr) {
	case "connect", "bind":
		ptr, size = n.Args[1], n.Args[2]
	case "sendto":
		ptr, size = n.Args[4], n.Args[5]
	default:
		return "", ""
	}
	if ptr == 0 {
		return "", ""
	}
	addr, errno := c.readAddr(seccomp.Notification{Pid: n.Pid, Args: [6]uint64{0, ptr, size}})
	if errno != 0 || len(addr) < 2 {
		return "", ""
	}
	return sockaddrString(addr), violations.FamilyName(int(binary.LittleEndian.Uint16(addr)))
}

// boundedConnect makes a blocking connect in slices of a tenth of a second
// (SO_SNDTIMEO on this copy of the socket, put back afterwards), for as
// long as the call is pending: a Unix listener whose backlog stays full,
// or a loopback listener that drops every SYN, would otherwise hold pid
// 1's thread and slot after the child that asked is gone. A non-blocking
// socket, or one whose owner set a send timeout, connects as asked.
func boundedConnect(sock int, connect func() error, pending func() bool) error {
	fl, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		return connect()
	}
	orig, err := unix.GetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_SNDTIMEO)
	if err != nil || orig.Sec != 0 || orig.Usec != 0 {
		return connect()
	}
	slice := unix.Timeval{Usec: 100000}
	if unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &slice) != nil {
		return connect()
	}
	defer unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_SNDTIMEO, orig)
	for {
		err := connect()
		switch err {
		case unix.EAGAIN:
			// A Unix listener's backlog stayed full for the slice.
			if !pending() {
				return err
			}
		case unix.EINPROGRESS, unix.EALREADY:
			// TCP, still connecting after the slice: wait for the end.
			for {
				fds := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLOUT}}
				k, perr := unix.Poll(fds, 100)
				if perr == nil && k == 1 {
					soerr, gerr := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_ERROR)
					switch {
					case gerr != nil:
						return gerr
					case soerr != 0:
						return unix.Errno(soerr)
					}
					return nil
				}
				if perr != nil && perr != unix.EINTR {
					return perr
				}
				if !pending() {
					return unix.EINPROGRESS
				}
			}
		default:
			return err
		}
	}
}
