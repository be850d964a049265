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
// for, and getsockname says the path it gave); a connect to a path is made
// only when the socket file there is one a socket of the children's
// namespace listens on (sock_diag, in that namespace, says which files
// those are), through a descriptor of that very file, so that nothing
// swapped in between is reached. Every host socket (a path bound by
// anything outside the children's namespace, the wrapped command's own
// included) stays refused, and logged. Datagram Unix sockets stay refused:
// a filter cannot see sendmsg's address, which may name a host socket.

// isUnixStream reports whether a socket type (with its flags) is one the
// children may have as a Unix socket.
func isUnixStream(typ int) bool {
	t := typ & 0xf
	return t == unix.SOCK_STREAM || t == unix.SOCK_SEQPACKET
}

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

// do runs f on the thread, in process pid's working directory and with
// its umask.
func (w *fsThread) do(pid int, f func() error) error {
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
	umask, err := umaskOf(pid)
	if err != nil {
		return unix.ESRCH
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
		unix.Umask(umask)
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

// bindPath binds sock to the path in addr, as process pid would.
func bindPath(pid, sock int, addr []byte) error {
	return fsWorker.do(pid, func() error { return rawSockaddrCall(unix.SYS_BIND, sock, addr) })
}

// openTarget opens the file a connect of process pid to the path in addr
// would reach (links followed, as connect follows them), as an O_PATH
// descriptor.
func openTarget(pid int, addr []byte) (int, error) {
	fd := -1
	err := fsWorker.do(pid, func() error {
		var err error
		fd, err = unix.Open(pathOf(addr), unix.O_PATH|unix.O_CLOEXEC, 0)
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

// listeningFiles is the socket files that sockets of the children's
// namespace are bound to, with whether each listens, from a dump of that
// namespace's Unix sockets (sock_diag, UNIX_DIAG_VFS).
func (c *Net) listeningFiles() (map[vfsID]bool, error) {
	diag, err := c.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(diag)
	const (
		sockDiagByFamily = 20
		udiagShowVFS     = 0x2
		unixDiagVFS      = 1
		tcpListen        = 10
	)
	// struct nlmsghdr, then struct unix_diag_req.
	req := make([]byte, unix.SizeofNlMsghdr+24)
	binary.LittleEndian.PutUint32(req[0:], uint32(len(req)))
	binary.LittleEndian.PutUint16(req[4:], sockDiagByFamily)
	binary.LittleEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	r := req[unix.SizeofNlMsghdr:]
	r[0] = unix.AF_UNIX
	binary.LittleEndian.PutUint32(r[4:], ^uint32(0)) // every state
	binary.LittleEndian.PutUint32(r[12:], udiagShowVFS)
	if err := unix.Sendto(diag, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	files := map[vfsID]bool{}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(diag, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return files, nil
			case unix.NLMSG_ERROR:
				return nil, errors.New("sock_diag refused the dump")
			}
			// struct unix_diag_msg (16 bytes), then attributes.
			if len(m.Data) < 16 {
				continue
			}
			state := m.Data[2]
			for a := m.Data[16:]; len(a) >= 4; {
				l := int(binary.LittleEndian.Uint16(a))
				if l < 4 || l > len(a) {
					break
				}
				if binary.LittleEndian.Uint16(a[2:]) == unixDiagVFS && l >= 12 {
					id := vfsID{ino: binary.LittleEndian.Uint32(a[4:]), dev: binary.LittleEndian.Uint32(a[8:])}
					files[id] = files[id] || state == tcpListen
				}
				a = a[(l+3)&^3:]
				if len(a) == 0 {
					break
				}
			}
		}
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
func (c *Net) unixTarget(n seccomp.Notification, addr []byte, v *violations.Log) (int, unix.Errno) {
	target, err := openTarget(n.Pid, addr)
	if err != nil {
		return -1, errnoOf(err)
	}
	id, isSock, err := fileID(target)
	if err != nil || !isSock {
		unix.Close(target)
		return -1, unix.ECONNREFUSED
	}
	files, err := c.listeningFiles()
	if err != nil {
		unix.Close(target)
		c.fail(fmt.Sprintf("cannot tell the children's Unix sockets from the host's (sock_diag: %v)", err))
		return -1, unix.EACCES
	}
	listening, ours := files[id]
	switch {
	case !ours:
		unix.Close(target)
		v.RecordMsg(n, fmt.Sprintf("blocked connect to unix:%s: processes started by the wrapped command reach only Unix sockets they bound themselves (no host Unix socket)", pathOf(addr)))
		return -1, unix.EACCES
	case !listening:
		unix.Close(target)
		return -1, unix.ECONNREFUSED
	}
	return target, 0
}
