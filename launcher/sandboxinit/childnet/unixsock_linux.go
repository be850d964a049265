package childnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/violations"
	"grok-sandbox/launcher/seccomp"
)

// The children's Unix sockets. A child's socket(AF_UNIX, SOCK_STREAM or
// SOCK_SEQPACKET) is made by the net helper, in the children's network
// namespace, like their IP sockets: abstract names live per network
// namespace, so the children bind and reach their own abstract names and
// never the host's. A path is no namespace's: a child's bind of a path is
// made here, from a thread that stands in the child's working directory
// and has its umask (so the socket file is where and what the child asked
// for, and getsockname says the path it gave), and the file it made is
// recorded (recordBound); a connect to a path is made only to a recorded
// file whose socket still listens (sock_diag, in the children's namespace,
// says), through a descriptor of that very file, so that nothing swapped
// in between is reached. Every host socket (a path bound by
// anything outside the children's namespace, the wrapped command's own
// included) stays refused, and logged. Datagram Unix sockets stay refused:
// a filter cannot see sendmsg's address, which may name a host socket.

// isUnixStream: the Unix socket types children may have.
var isUnixStream = seccomp.UnixStreamType

// unixAddr says what a sockaddr_un names: "" for none (autobind, an
// address of another family), "@" for an abstract name, "/" for a path.
func unixAddr(b []byte) string {
	if len(b) < 2 || binary.LittleEndian.Uint16(b) != unix.AF_UNIX {
		return ""
	}
	switch {
	case len(b) == 2:
		return ""
	case b[2] == 0:
		return "@"
	}
	return "/"
}

// pathOf is the path a sockaddr_un with a path names.
func pathOf(b []byte) string { return trimNUL(b[2:]) }

// fsThread runs functions on one OS thread whose working directory and
// umask are its own (unshare(CLONE_FS)), never the rest of pid 1's.
type fsThread struct {
	once sync.Once
	reqs chan func()
	err  error
}

var fsWorker fsThread

// do runs f on the thread, in process pid's working directory and, for
// what creates a file (withUmask), with its umask.
func (w *fsThread) do(pid int, withUmask bool, f func() error) error {
	w.once.Do(func() {
		w.reqs = make(chan func())
		started := make(chan error)
		go func() {
			// Never unlocked: the thread's file system context is its own
			// for good, and no other goroutine may run on it.
			runtime.LockOSThread()
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				started <- err
				return
			}
			started <- nil
			for f := range w.reqs {
				f()
			}
		}()
		w.err = <-started
	})
	if w.err != nil {
		return fmt.Errorf("unshare(CLONE_FS): %v", w.err)
	}
	umask := -1
	if withUmask {
		m, err := umaskOf(pid)
		if err != nil {
			return unix.ESRCH
		}
		umask = m
	}
	cwd, err := unix.Open(fmt.Sprintf("/proc/%d/cwd", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return unix.ESRCH
	}
	defer unix.Close(cwd)
	done := make(chan error)
	w.reqs <- func() {
		if err := unix.Fchdir(cwd); err != nil {
			done <- err
			return
		}
		if umask >= 0 {
			unix.Umask(umask)
		}
		done <- f()
	}
	return <-done
}

// umaskOf is process pid's umask, from /proc/PID/status.
func umaskOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return int(m), err
		}
	}
	return 0, errors.New("no Umask")
}

// bindPath binds sock to the path in addr, as process pid would, and
// records the file it is bound to.
func (c *Net) bindPath(pid, sock int, addr []byte) error {
	err := fsWorker.do(pid, true, func() error { return rawSockaddrCall(unix.SYS_BIND, sock, addr) })
	if err == nil {
		c.recordBound(sock)
	}
	return err
}

// openTarget opens the file a connect of process pid to the path in addr
// would reach (links followed, as connect follows them), as an O_PATH
// descriptor.
func openTarget(pid int, addr []byte) (int, error) {
	path := pathOf(addr)
	if strings.HasPrefix(path, "/") {
		// No working directory to stand in: any thread will do.
		return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	}
	fd := -1
	err := fsWorker.do(pid, false, func() error {
		var err error
		fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}

// connectThrough connects sock to the socket file target names: by the
// descriptor, never by the path again.
func connectThrough(sock, target int) error {
	var sa [2 + 32]byte
	binary.LittleEndian.PutUint16(sa[:], unix.AF_UNIX)
	n := copy(sa[2:], "/proc/self/fd/"+strconv.Itoa(target))
	return rawSockaddrCall(unix.SYS_CONNECT, sock, sa[:2+n+1])
}

// Where a socket file stands: its device and inode, as unix_diag reports
// them (32 bits each).
type vfsID struct{ dev, ino uint32 }

// maxBound bounds the record of the children's bound socket files; past
// it, connects to files bound later are refused (fail closed).
const maxBound = 1 << 20

// sockFile asks sock_diag, in the children's namespace, which file the
// socket with inode sockIno is bound to and whether it listens; found is
// false when no socket of the namespace has that inode (any more).
func (c *Net) sockFile(sockIno uint32) (id vfsID, listening, found bool, err error) {
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	if c.diag < 0 {
		return vfsID{}, false, false, errors.New("no sock_diag socket")
	}
	const (
		sockDiagByFamily = 20
		udiagShowVFS     = 0x2
		unixDiagVFS      = 1
		tcpListen        = 10
	)
	// struct nlmsghdr, then struct unix_diag_req: one socket, by inode,
	// any cookie.
	req := make([]byte, unix.SizeofNlMsghdr+24)
	binary.LittleEndian.PutUint32(req[0:], uint32(len(req)))
	binary.LittleEndian.PutUint16(req[4:], sockDiagByFamily)
	binary.LittleEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	c.diagSeq++
	binary.LittleEndian.PutUint32(req[8:], c.diagSeq)
	r := req[unix.SizeofNlMsghdr:]
	r[0] = unix.AF_UNIX
	binary.LittleEndian.PutUint32(r[4:], ^uint32(0)) // every state
	binary.LittleEndian.PutUint32(r[8:], sockIno)
	binary.LittleEndian.PutUint32(r[12:], udiagShowVFS)
	binary.LittleEndian.PutUint32(r[16:], ^uint32(0))
	binary.LittleEndian.PutUint32(r[20:], ^uint32(0))
	if err := unix.Sendto(c.diag, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return vfsID{}, false, false, err
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(c.diag, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return vfsID{}, false, false, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return vfsID{}, false, false, err
		}
		for _, m := range msgs {
			if m.Header.Seq != c.diagSeq {
				continue // a late answer to an earlier request
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				// ENOENT: no such socket in the namespace.
				return vfsID{}, false, false, nil
			case sockDiagByFamily:
			default:
				continue
			}
			// struct unix_diag_msg (16 bytes), then attributes.
			if len(m.Data) < 16 || binary.LittleEndian.Uint32(m.Data[4:]) != sockIno {
				return vfsID{}, false, false, nil
			}
			listening = m.Data[2] == tcpListen
			for a := m.Data[16:]; len(a) >= 4; {
				l := int(binary.LittleEndian.Uint16(a))
				if l < 4 || l > len(a) {
					break
				}
				if binary.LittleEndian.Uint16(a[2:]) == unixDiagVFS && l >= 12 {
					return vfsID{ino: binary.LittleEndian.Uint32(a[4:]), dev: binary.LittleEndian.Uint32(a[8:])}, listening, true, nil
				}
				if (l+3)&^3 >= len(a) {
					break
				}
				a = a[(l+3)&^3:]
			}
			// Bound to no file (abstract, or not bound).
			return vfsID{}, listening, false, nil
		}
	}
}

// recordBound notes the file a children's socket was just bound to (by
// bindPath): a socket file stays its socket's for as long as it exists,
// since no bind can take a file that is there, so a connect to that file
// can only ever reach this socket.
func (c *Net) recordBound(sock int) {
	var st unix.Stat_t
	if unix.Fstat(sock, &st) != nil {
		return
	}
	id, _, found, err := c.sockFile(uint32(st.Ino))
	if err != nil || !found {
		return
	}
	c.boundMu.Lock()
	defer c.boundMu.Unlock()
	if c.bound == nil {
		c.bound = map[vfsID]uint32{}
	}
	if len(c.bound) < maxBound {
		c.bound[id] = uint32(st.Ino)
	}
}

// fileID is the device and inode of an open file, as unix_diag encodes
// them.
func fileID(fd int) (vfsID, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return vfsID{}, false, err
	}
	dev := uint32((unix.Major(st.Dev) << 20) | (unix.Minor(st.Dev) & 0xfffff))
	return vfsID{dev: dev, ino: uint32(st.Ino)}, st.Mode&unix.S_IFMT == unix.S_IFSOCK, nil
}

// unixTarget opens the socket file a child's connect to a path would
// reach, when a socket of the children's namespace listens on it; else it
// says what connect would have said (ENOENT, ECONNREFUSED, ...), or
// EACCES, logged, for a socket of anybody else's.
//
// With dgram, the target of a datagram socket's connect or send: any
// socket of the children's bound to that file (the kernel then checks that
// it is a datagram socket, through the descriptor), listening or not.
func (c *Net) unixTarget(n seccomp.Notification, addr []byte, v *violations.Log, dgram bool) (int, unix.Errno) {
	target, err := openTarget(n.Pid, addr)
	if err != nil {
		return -1, errnoOf(err)
	}
	id, isSock, err := fileID(target)
	if err != nil || !isSock {
		unix.Close(target)
		return -1, unix.ECONNREFUSED
	}
	c.boundMu.Lock()
	sockIno, ours := c.bound[id]
	c.boundMu.Unlock()
	if !ours {
		unix.Close(target)
		v.RecordMsg(n, fmt.Sprintf("blocked %s to unix:%s: processes started by the wrapped command reach only Unix sockets they bound themselves (no host Unix socket)", seccomp.SyscallName(c.arch, n.Nr), pathOf(addr)))
		return -1, unix.EACCES
	}
	now, listening, found, err := c.sockFile(sockIno)
	switch {
	case err != nil:
		unix.Close(target)
		v.RecordMsg(n, fmt.Sprintf("blocked %s to unix:%s: the children's sockets cannot be told from the host's (sock_diag: %v)", seccomp.SyscallName(c.arch, n.Nr), pathOf(addr), err))
		return -1, unix.EACCES
	case !found || now != id:
		// Its socket is closed: a stale file, as anywhere.
		c.boundMu.Lock()
		delete(c.bound, id)
		c.boundMu.Unlock()
		unix.Close(target)
		return -1, unix.ECONNREFUSED
	case !listening && !dgram:
		unix.Close(target)
		return -1, unix.ECONNREFUSED
	}
	return target, 0
}
