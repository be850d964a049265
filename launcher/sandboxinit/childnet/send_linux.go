package childnet

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/violations"
	"grok-sandbox/launcher/seccomp"
)

// The children's sends. A Unix datagram socket sends to whatever socket
// file its address names, the host's included (a path is no network
// namespace's, and Landlock on Linux 6.18 does not cover it), and that
// address is in the caller's memory: sendmsg's and sendmmsg's inside a
// struct no filter reads, and any of them rewritable by another thread
// between a check and the kernel's own read. So, where the children may
// have Unix datagram sockets (seccomp.Rules.SendNotify), every send of
// theirs that can carry an address (sendto with one, sendmsg, sendmmsg) is
// made here instead: on a copy of the socket (pidfd_getfd), with copies of
// the address, the data and the control messages, the address checked as
// a connect's is (a path only to a socket file a socket of the children's
// own is bound to, reached through a descriptor of that very file; an
// abstract name only from a socket of the children's namespace; an
// address on any other socket of the host's, refused), and the caller's
// descriptors in SCM_RIGHTS passed as they are. Sends without an address
// (write, send, sendto without one) go to the peer a checked connect chose
// and stay the kernel's, at full speed.
//
// The filter's listener is killable-only once a notification is received
// (seccomp.InstallWithKillableListener): a send made here is answered once,
// and never restarted and made twice because a signal came in between. A
// blocking send that must wait watches for a signal its caller would take
// (seccomp.PendingSignals) and then answers as the kernel does: how much it
// sent, or a restart (ERESTARTSYS: the caller's handler runs, and the call
// is made again where SA_RESTART asks for it).
//
// What differs from the kernel's own send: a datagram's receiver that asks
// for its sender's credentials (SO_PASSCRED) gets pid 1's, since only pid 1
// sends it; MSG_ZEROCOPY on a socket with SO_ZEROCOPY fails with ENOBUFS
// (the copy the kernel would pin is pid 1's), as zero-copy sends may.

const (
	uioMaxIOV = 1024      // UIO_MAXIOV
	msgZC     = 0x4000000 // MSG_ZEROCOPY
	// maxRecord bounds a datagram or seqpacket record (one send) copied
	// here: larger than any send buffer a process without CAP_NET_ADMIN
	// can set by default (wmem_max); beyond it EMSGSIZE, as the kernel
	// says for a record that does not fit.
	maxRecord = 4 << 20
	// maxRW is MAX_RW_COUNT, the most one call moves.
	maxRW = 1<<31 - 4096
	// scmMaxFD is SCM_MAX_FD, the most descriptors one message passes.
	scmMaxFD = 253
	// sunPathMax is the size of sockaddr_un: a longer Unix address is
	// EINVAL.
	sunPathMax = 110
	// streamChunk is how much of a stream send is copied at a time.
	streamChunk   = 256 << 10
	sizeofMsghdr  = 56
	sizeofMmsghdr = 64
)

// outMsg is one message to send: the data's place in the caller's memory,
// the checked address and the control messages, translated.
type outMsg struct {
	iov     []unix.RemoteIovec
	total   int
	name    []byte
	control []byte
	fds     []int // this process's copies of the caller's SCM_RIGHTS
	target  int   // the socket file name reaches, held open (-1: none)
}

func (m *outMsg) release() {
	for _, fd := range m.fds {
		dropFD(fd)
	}
	m.fds = nil
	if m.target >= 0 {
		unix.Close(m.target) // an O_PATH descriptor: its close never waits
		m.target = -1
	}
}

// sendSock is what a send needs of its socket.
type sendSock struct {
	fd, domain, typ int
	private         bool
	blocking        bool
	timeout         time.Duration // SO_SNDTIMEO, 0: none
}

// onSend makes a child's sendto with an address, sendmsg or sendmmsg
// (see above); it always answers.
func (c *Net) onSend(n seccomp.Notification, r seccomp.Reply, v *violations.Log) {
	name := seccomp.SyscallName(c.arch, n.Nr)
	if backlogged() {
		_ = r.Return(0, unix.ENOBUFS)
		return
	}
	pidfd, tgid, ok := callerPidfd(n, r, true)
	if !ok {
		if r.Valid() {
			_ = r.Return(0, unix.ENOBUFS)
		}
		return
	}
	fd, err := unix.PidfdGetfd(pidfd, int(int32(n.Args[0])), 0)
	if err != nil {
		unix.Close(pidfd)
		if err == unix.ENOSYS {
			v.RecordMsg(n, "blocked "+name+": cannot read children's sockets (pidfd_getfd, Linux 5.6)")
			_ = r.Return(0, unix.EACCES)
			return
		}
		if err == unix.EMFILE || err == unix.ENFILE {
			_ = r.Return(0, unix.ENOBUFS)
			return
		}
		_ = r.Return(0, unix.EBADF)
		return
	}
	noteCopies(1)
	unix.CloseOnExec(fd)
	s := sendSock{fd: fd}
	release := func() { dropFD(fd); unix.Close(pidfd) }
	if errno := c.describe(&s); errno != 0 {
		release()
		_ = r.Return(0, errno)
		return
	}
	call := sendCall{c: c, n: n, r: r, v: v, name: name, tgid: tgid, pidfd: pidfd, s: s, backoff: 5 * time.Millisecond}
	val, errno, wait := call.run(false)
	if !wait {
		release()
		_ = r.Return(val, errno)
		return
	}
	// It must wait for room: from a goroutine, so that the other
	// children are served meanwhile, within bounds (each holds a
	// goroutine, and its caller's descriptors while it tries).
	if !waitSlot(tgid) {
		release()
		// What went already is what the call did, as a send that a
		// signal interrupts; nothing: ENOBUFS.
		if v, ok := call.progress(); ok {
			_ = r.Return(v, 0)
		} else {
			_ = r.Return(0, unix.ENOBUFS)
		}
		return
	}
	go func() {
		defer freeSlot(tgid)
		val, errno, _ := call.run(true)
		release()
		_ = r.Return(val, errno)
	}()
}

// The sends waiting for room: at most maxWaiting at once, and
// maxWaitingEach of one process's, so that no child holds every place;
// beyond them a send that must wait fails with ENOBUFS.
const (
	maxWaiting     = 256
	maxWaitingEach = 32
)

var waits struct {
	sync.Mutex
	all int
	by  map[int]int
}

func waitSlot(tgid int) bool {
	waits.Lock()
	defer waits.Unlock()
	if waits.all >= maxWaiting || waits.by[tgid] >= maxWaitingEach {
		return false
	}
	if waits.by == nil {
		waits.by = map[int]int{}
	}
	waits.all++
	waits.by[tgid]++
	return true
}

func freeSlot(tgid int) {
	waits.Lock()
	defer waits.Unlock()
	waits.all--
	if waits.by[tgid]--; waits.by[tgid] <= 0 {
		delete(waits.by, tgid)
	}
}

// describe fills in what s's socket is; ENOTSOCK for a descriptor that is
// none.
func (c *Net) describe(s *sendSock) unix.Errno {
	var err error
	if s.typ, err = unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
		return errnoOf(err)
	}
	if s.domain, err = unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil {
		return errnoOf(err)
	}
	s.private, _ = c.private(s.fd)
	fl, err := unix.FcntlInt(uintptr(s.fd), unix.F_GETFL, 0)
	if err != nil {
		return errnoOf(err)
	}
	s.blocking = fl&unix.O_NONBLOCK == 0
	if tv, err := unix.GetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err == nil {
		s.timeout = time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
	}
	return 0
}

// sendCall is one notified send.
type sendCall struct {
	c     *Net
	n     seccomp.Notification
	r     seccomp.Reply
	v     *violations.Log
	name  string
	tgid  int
	pidfd int
	s     sendSock
	// sent counts the messages of a sendmmsg already sent (and their
	// msg_len written), so that a run that goes on after a wait goes on
	// from there.
	sent int
	// done counts the bytes of a stream send already sent, likewise.
	done int
	// backoff is the wait between tries at a receiver that stays full;
	// sig, its look at the caller's signals.
	backoff time.Duration
	sig     seccomp.SignalWatch
}

// run makes the call. With mayWait false it never waits: a blocking send
// that would have to (nothing sent yet) reports wait, and is run again with
// mayWait from where it stopped.
func (k *sendCall) run(mayWait bool) (val int64, errno unix.Errno, wait bool) {
	flags := 0
	switch k.name {
	case "sendto":
		flags = int(int32(k.n.Args[3]))
	case "sendmsg":
		flags = int(int32(k.n.Args[2]))
	case "sendmmsg":
		flags = int(int32(k.n.Args[3]))
	}
	if k.name != "sendmmsg" {
		m, errno := k.message(0)
		if errno != 0 {
			return 0, errno, false
		}
		defer m.release()
		return k.send(&m, flags, mayWait)
	}
	vlen := int(uint32(k.n.Args[2]))
	if vlen > uioMaxIOV {
		vlen = uioMaxIOV
	}
	for k.sent < vlen {
		m, errno := k.message(k.sent)
		var n int64
		if errno == 0 {
			var w bool
			n, errno, w = k.send(&m, flags, mayWait)
			if w {
				m.release()
				return 0, 0, true
			}
		}
		m.release()
		if errno != 0 {
			if k.sent > 0 {
				return int64(k.sent), 0, false
			}
			return 0, errno, false
		}
		// msg_len: the bytes of this message sent.
		var l [4]byte
		binary.LittleEndian.PutUint32(l[:], uint32(n))
		if !vmWrite(k.n.Pid, uintptr(k.n.Args[1])+uintptr(k.sent)*sizeofMmsghdr+sizeofMsghdr, l[:]) {
			if k.sent > 0 {
				return int64(k.sent), 0, false
			}
			return 0, unix.EFAULT, false
		}
		k.sent++
		k.done = 0
		if !mayWait && k.sent < vlen {
			// One message on the loop's thread: the rest from a
			// goroutine (a child's thousand messages of 2 GB each
			// must not hold every other call).
			return 0, 0, true
		}
	}
	return int64(k.sent), 0, false
}

// message reads message i of the call (0 for sendto and sendmsg) out of
// the caller's memory and checks its address.
func (k *sendCall) message(i int) (outMsg, unix.Errno) {
	m := outMsg{target: -1}
	var namePtr, nameLen, ctlPtr, ctlLen uint64
	if k.name == "sendto" {
		// len is a size_t, capped at MAX_RW_COUNT as the kernel caps
		// it (a bad range then fails with EFAULT as it reads).
		l := k.n.Args[2]
		if l > maxRW {
			l = maxRW
		}
		if l > 0 {
			m.iov = []unix.RemoteIovec{{Base: uintptr(k.n.Args[1]), Len: int(l)}}
		}
		namePtr, nameLen = k.n.Args[4], uint64(uint32(k.n.Args[5]))
		if int32(nameLen) < 0 || nameLen > uint64(unsafe.Sizeof(unix.RawSockaddrAny{})) {
			return m, unix.EINVAL
		}
	} else {
		at := uintptr(k.n.Args[1]) + uintptr(i)*sizeofMmsghdr
		var h [sizeofMsghdr]byte
		if !vmRead(k.n.Pid, at, h[:]) {
			return m, unix.EFAULT
		}
		namePtr = binary.LittleEndian.Uint64(h[0:])
		nl := int32(binary.LittleEndian.Uint32(h[8:]))
		iovPtr := binary.LittleEndian.Uint64(h[16:])
		iovLen := binary.LittleEndian.Uint64(h[24:])
		ctlPtr = binary.LittleEndian.Uint64(h[32:])
		ctlLen = binary.LittleEndian.Uint64(h[40:])
		if namePtr == 0 {
			nl = 0
		}
		if nl < 0 {
			return m, unix.EINVAL
		}
		nameLen = uint64(nl)
		if nameLen > uint64(unsafe.Sizeof(unix.RawSockaddrAny{})) {
			nameLen = uint64(unsafe.Sizeof(unix.RawSockaddrAny{}))
		}
		if iovLen > uioMaxIOV {
			return m, unix.EMSGSIZE
		}
		if ctlLen > 1<<31-1 {
			return m, unix.ENOBUFS
		}
		if iovLen > 0 {
			raw := make([]byte, iovLen*16)
			if !vmRead(k.n.Pid, uintptr(iovPtr), raw) {
				return m, unix.EFAULT
			}
			for j := 0; j < int(iovLen); j++ {
				base := binary.LittleEndian.Uint64(raw[j*16:])
				l := int64(binary.LittleEndian.Uint64(raw[j*16+8:]))
				if l < 0 {
					return m, unix.EINVAL
				}
				if l > maxRW {
					l = maxRW
				}
				if l > 0 {
					m.iov = append(m.iov, unix.RemoteIovec{Base: uintptr(base), Len: int(l)})
				}
			}
		}
	}
	for _, v := range m.iov {
		m.total += v.Len
		if m.total > maxRW {
			m.total = maxRW // as the kernel caps it
		}
	}
	if namePtr != 0 && nameLen > 0 {
		name := make([]byte, nameLen)
		if !vmRead(k.n.Pid, uintptr(namePtr), name) {
			return m, unix.EFAULT
		}
		if errno := k.checkName(&m, name); errno != 0 {
			m.release()
			return m, errno
		}
	}
	if ctlLen > 0 {
		if ctlLen > uint64(optmemMax()) {
			m.release()
			return m, unix.ENOBUFS
		}
		ctl := make([]byte, ctlLen)
		if !vmRead(k.n.Pid, uintptr(ctlPtr), ctl) {
			m.release()
			return m, unix.EFAULT
		}
		if errno := k.translateControl(&m, ctl); errno != 0 {
			m.release()
			return m, errno
		}
		m.control = ctl
	}
	return m, 0
}

// checkName checks the address a message names and sets m.name to what
// this process sends to: the address itself, or, for a path, a path to a
// descriptor of the socket file it names.
func (k *sendCall) checkName(m *outMsg, name []byte) unix.Errno {
	s := k.s
	if s.domain == unix.AF_UNIX {
		// Only a datagram socket sends to a name; a stream socket
		// refuses one and a seqpacket socket ignores it, as they will
		// here.
		if s.typ != unix.SOCK_DGRAM {
			m.name = name
			return 0
		}
		if len(name) > 2+sunPathMax {
			return unix.EINVAL
		}
		switch unixAddr(name) {
		case "/":
			target, errno := k.c.unixTarget(k.n, name, k.v, true)
			if errno != 0 {
				return errno
			}
			m.target = target
			m.name = procFDAddr(target)
			return 0
		case "@":
			if !s.private {
				k.v.RecordMsg(k.n, fmt.Sprintf("blocked %s to %s: a socket of the host's network namespace (a socketpair, or one the wrapped command handed down) reaches the host's abstract names", k.name, sockaddrString(name)))
				return unix.EACCES
			}
		}
		// An abstract name of the children's namespace, or no name
		// the kernel takes (it says EINVAL).
		m.name = name
		return 0
	}
	if !s.private {
		k.v.RecordMsg(k.n, fmt.Sprintf("blocked %s to %s: processes started by the wrapped command have no network but their private loopback", k.name, sockaddrString(name)))
		return unix.EACCES
	}
	// A socket of the children's namespace: wherever its address
	// points, nothing outside is reached.
	m.name = name
	return 0
}

// procFDAddr is a sockaddr_un naming this process's descriptor fd.
func procFDAddr(fd int) []byte {
	sa := make([]byte, 2, 2+32)
	binary.LittleEndian.PutUint16(sa, unix.AF_UNIX)
	sa = append(sa, fmt.Sprintf("/proc/self/fd/%d", fd)...)
	return append(sa, 0)
}

// translateControl rewrites the control messages of m in place for this
// process to send: the caller's descriptors in SCM_RIGHTS become this
// process's copies of them, and SCM_CREDENTIALS, which may claim only the
// caller's own process, claims this one's (the only credentials it may
// send). Malformed messages fail as the kernel fails them.
func (k *sendCall) translateControl(m *outMsg, ctl []byte) unix.Errno {
	const hdr = unix.SizeofCmsghdr
	// First the shape, and how many descriptors (the kernel takes
	// SCM_MAX_FD in all): nothing is copied for a message it refuses.
	nfds := 0
	for off := 0; off+hdr <= len(ctl); {
		l := int(binary.LittleEndian.Uint64(ctl[off:]))
		if l < hdr || l > len(ctl)-off {
			return unix.EINVAL
		}
		if int32(binary.LittleEndian.Uint32(ctl[off+8:])) == unix.SOL_SOCKET && int32(binary.LittleEndian.Uint32(ctl[off+12:])) == unix.SCM_RIGHTS {
			nfds += (l - hdr) / 4
		}
		off += (l + 7) &^ 7
	}
	if nfds > scmMaxFD {
		return unix.EINVAL
	}
	for off := 0; off+hdr <= len(ctl); {
		l := int(binary.LittleEndian.Uint64(ctl[off:]))
		if l < hdr || l > len(ctl)-off {
			return unix.EINVAL
		}
		level := int32(binary.LittleEndian.Uint32(ctl[off+8:]))
		typ := int32(binary.LittleEndian.Uint32(ctl[off+12:]))
		data := ctl[off+hdr : off+l]
		if level == unix.SOL_SOCKET {
			switch typ {
			case unix.SCM_RIGHTS:
				for j := 0; j+4 <= len(data); j += 4 {
					theirs := int(int32(binary.LittleEndian.Uint32(data[j:])))
					ours, err := unix.PidfdGetfd(k.pidfd, theirs, 0)
					if err == unix.EMFILE || err == unix.ENFILE {
						return unix.ENOBUFS
					}
					if err != nil {
						return unix.EBADF
					}
					noteCopies(1)
					unix.CloseOnExec(ours)
					m.fds = append(m.fds, ours)
					binary.LittleEndian.PutUint32(data[j:], uint32(ours))
				}
			case unix.SCM_CREDENTIALS:
				if len(data) < 12 {
					return unix.EINVAL
				}
				// The kernel lets a process claim its own pid and its
				// real, effective or saved ids only (without
				// CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, which no child
				// has); the claim is then made pid 1's, the only one it
				// can send.
				if int(int32(binary.LittleEndian.Uint32(data[0:]))) != k.tgid || !ownIDs(k.n.Pid, binary.LittleEndian.Uint32(data[4:]), binary.LittleEndian.Uint32(data[8:])) {
					return unix.EPERM
				}
				binary.LittleEndian.PutUint32(data[0:], uint32(os.Getpid()))
				binary.LittleEndian.PutUint32(data[4:], uint32(os.Getuid()))
				binary.LittleEndian.PutUint32(data[8:], uint32(os.Getgid()))
			}
		}
		off += (l + 7) &^ 7
	}
	return 0
}

// send sends m on the socket as the caller's flags ask, waiting for room
// (when mayWait) as a blocking send would; wait reports a send that would
// have had to wait when it may not (k.done says how much of a stream's
// was sent by then).
func (k *sendCall) send(m *outMsg, flags int, mayWait bool) (val int64, errno unix.Errno, wait bool) {
	s := k.s
	if flags&msgZC != 0 {
		if on, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY); err == nil && on != 0 {
			return 0, unix.ENOBUFS, false
		}
		flags &^= msgZC
	}
	blocking := s.blocking && flags&unix.MSG_DONTWAIT == 0
	ours := flags | unix.MSG_NOSIGNAL | unix.MSG_DONTWAIT
	var deadline time.Time
	if s.timeout > 0 {
		deadline = time.Now().Add(s.timeout)
	}
	stream := s.typ == unix.SOCK_STREAM
	if !stream && m.total > maxRecord {
		return 0, unix.EMSGSIZE, false
	}
	for {
		n, err := k.sendSome(m, ours, stream)
		if err == 0 && stream && n == 0 && k.done < m.total {
			// Nothing more goes (nor would it, again).
			return int64(k.done), 0, false
		}
		if err == 0 {
			k.done += n
			if !stream || k.done >= m.total {
				return k.result(m, stream), 0, false
			}
			if !mayWait {
				// One chunk on the loop's thread: the rest from a
				// goroutine.
				return 0, 0, true
			}
			continue
		}
		if err != unix.EAGAIN || !blocking {
			if stream && k.done > 0 {
				return int64(k.done), 0, false
			}
			if err == unix.EPIPE && flags&unix.MSG_NOSIGNAL == 0 {
				_ = unix.Tgkill(k.tgid, k.n.Pid, unix.SIGPIPE)
			}
			return 0, err, false
		}
		if !mayWait {
			// Run again, from k.done, where it may wait.
			return 0, 0, true
		}
		if errno := k.waitRoom(deadline); errno != 0 {
			if stream && k.done > 0 {
				return int64(k.done), 0, false
			}
			return 0, errno, false
		}
	}
}

// progress is what a call that stopped part-way has done: messages of a
// sendmmsg, or bytes of a stream send.
func (k *sendCall) progress() (int64, bool) {
	if k.name == "sendmmsg" {
		return int64(k.sent), k.sent > 0
	}
	return int64(k.done), k.done > 0
}

func (k *sendCall) result(m *outMsg, stream bool) int64 {
	if stream {
		return int64(k.done)
	}
	return int64(m.total)
}

// sendSome makes one sendmsg of m (a stream's from k.done on, at most a
// chunk of it) on this process's copy of the socket.
func (k *sendCall) sendSome(m *outMsg, flags int, stream bool) (int, unix.Errno) {
	iov, size := m.iov, m.total
	if stream {
		iov, size = sliceIOV(m.iov, k.done, streamChunk)
	}
	buf := make([]byte, size)
	if size > 0 {
		local := []unix.Iovec{{Base: &buf[0]}}
		local[0].SetLen(size)
		got, err := unix.ProcessVMReadv(k.n.Pid, local, iov, 0)
		if err != nil || got != size {
			return 0, unix.EFAULT
		}
	}
	var h unix.Msghdr
	var v unix.Iovec
	if size > 0 {
		v.Base = &buf[0]
		v.SetLen(size)
		h.Iov = &v
		h.SetIovlen(1)
	}
	if len(m.name) > 0 {
		h.Name = &m.name[0]
		h.Namelen = uint32(len(m.name))
	}
	// The control messages go with the first bytes only, as the kernel
	// attaches them to the first part of a stream send.
	if len(m.control) > 0 && k.done == 0 {
		h.Control = &m.control[0]
		h.SetControllen(len(m.control))
	}
	r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(k.s.fd), uintptr(unsafe.Pointer(&h)), uintptr(flags))
	runtime.KeepAlive(buf)
	runtime.KeepAlive(m)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// sliceIOV is at most max bytes of iov from byte off on.
func sliceIOV(iov []unix.RemoteIovec, off, max int) ([]unix.RemoteIovec, int) {
	var out []unix.RemoteIovec
	size := 0
	for _, v := range iov {
		if off >= v.Len {
			off -= v.Len
			continue
		}
		v.Base += uintptr(off)
		v.Len -= off
		off = 0
		if v.Len > max-size {
			v.Len = max - size
		}
		out = append(out, v)
		size += v.Len
		if size == max {
			break
		}
	}
	return out, size
}

// waitRoom waits until the socket may take more, for a blocking send: 0 to
// try again; EAGAIN past the socket's send timeout; seccomp.ErrRestart (or EINTR,
// see interrupted) when its caller has a signal to take: the kernel's
// answer to a blocking send that a signal interrupts before anything was
// sent; ESRCH when the caller is gone.
func (k *sendCall) waitRoom(deadline time.Time) unix.Errno {
	for {
		wait := 50
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return unix.EAGAIN
			}
			if left < 50*time.Millisecond {
				wait = int(left/time.Millisecond) + 1
			}
		}
		fds := []unix.PollFd{{Fd: int32(k.s.fd), Events: unix.POLLOUT}}
		began := time.Now()
		nready, err := unix.Poll(fds, wait)
		if !k.r.Valid() {
			return unix.ESRCH
		}
		if errno := k.interrupted(); errno != 0 {
			return errno
		}
		if err == nil && nready == 1 {
			// Ready, or an error the next send reports. A datagram
			// socket without a peer is always "ready" while its
			// receiver's queue may stay full: then try ever less often
			// (5 ms, doubling, up to 200 ms).
			if k.s.typ != unix.SOCK_STREAM && time.Since(began) < time.Millisecond {
				time.Sleep(k.backoff)
				if k.backoff *= 2; k.backoff > 200*time.Millisecond {
					k.backoff = 200 * time.Millisecond
				}
			} else {
				k.backoff = 5 * time.Millisecond
			}
			return 0
		}
	}
}

// interrupted says how a waiting send gives way to a signal of its
// caller's, or 0 while it has none (seccomp.SignalWatch), as for any
// blocking send.
func (k *sendCall) interrupted() unix.Errno { return k.sig.Check(k.n.Pid) }

// vmWrite copies buf into process pid's memory at addr, whole or not at
// all.
func vmWrite(pid int, addr uintptr, buf []byte) bool {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	got, err := unix.ProcessVMWritev(pid, local, remote, 0)
	return err == nil && got == len(buf)
}

// ownIDs reports whether uid and gid, as process pid sees them (in its
// user namespace), are among its own real, effective and saved ids.
func ownIDs(pid int, uid, gid uint32) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	u, okU := mapID(pid, "uid_map", uid)
	g, okG := mapID(pid, "gid_map", gid)
	if !okU || !okG {
		return false
	}
	has := func(line string, id uint32) bool {
		f := strings.Fields(line)
		for i := 1; i < len(f) && i <= 3; i++ { // real, effective, saved
			if v, err := strconv.ParseUint(f[i], 10, 32); err == nil && uint32(v) == id {
				return true
			}
		}
		return false
	}
	var uOK, gOK bool
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "Uid:"):
			uOK = has(line, u)
		case strings.HasPrefix(line, "Gid:"):
			gOK = has(line, g)
		}
	}
	return uOK && gOK
}

// mapID turns id, as process pid sees it, into this process's view, by
// pid's uid_map or gid_map (which name the ids of the namespace that
// reads them).
func mapID(pid int, file string, id uint32) (uint32, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, e1 := strconv.ParseUint(f[0], 10, 32)
		out, e2 := strconv.ParseUint(f[1], 10, 32)
		n, e3 := strconv.ParseUint(f[2], 10, 32)
		if e1 != nil || e2 != nil || e3 != nil {
			continue
		}
		if uint64(id) >= in && uint64(id)-in < n {
			return uint32(out + uint64(id) - in), true
		}
	}
	return 0, false
}

var optmem struct {
	once sync.Once
	max  int
}

// optmemMax is net.core.optmem_max, the most control data one send
// takes (ENOBUFS beyond it).
func optmemMax() int {
	optmem.once.Do(func() {
		optmem.max = 20480
		if b, err := os.ReadFile("/proc/sys/net/core/optmem_max"); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
				optmem.max = v
			}
		}
	})
	return optmem.max
}
