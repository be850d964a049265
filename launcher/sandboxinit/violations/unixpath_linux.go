package violations

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ConnectToMissingPath reports whether a blocked connect(fd, addr, addrlen)
// of thread tid named a Unix socket path that does not exist in the
// caller's view of the file system. glibc tries /var/run/nscd/socket (and
// NSS modules their own sockets) at every user lookup, so without this
// every `id`, `bash` or `curl` run by the command would leave a violation
// line for an attempt that could not have reached anything.
//
// It decides only whether the refusal is logged, never whether the call is
// allowed: the call fails with EACCES either way (the supervisor's answer
// depends on who calls, nothing else). The address is read from the
// caller's memory, which another of its threads can change under the read
// (and the path can be created or removed just after): the worst a caller
// can do with that is keep its own refused attempt out of the log, which it
// could do as well by connecting to a path that does not exist. Anything
// unclear (an address that cannot be read, an abstract or unnamed socket,
// another family, a path that exists or whose existence cannot be settled
// quickly) counts as not missing, so the line is written.
func ConnectToMissingPath(tid int, addr, addrlen uint64) bool {
	path, ok := unixPathAt(tid, addr, addrlen)
	if !ok {
		return false
	}
	// The path as the caller's connect would resolve it: from its root,
	// or, relative, from its working directory.
	base := "/proc/" + strconv.Itoa(tid) + "/root/"
	if path[0] != '/' {
		base = "/proc/" + strconv.Itoa(tid) + "/cwd/"
	}
	return missingWithin(base+path, statWait)
}

// unixPathAt reads the sockaddr at addr in tid's memory and returns its
// path when it is a pathname AF_UNIX address (not abstract, not unnamed).
func unixPathAt(tid int, addr, addrlen uint64) (string, bool) {
	const sizeofSockaddrUn = 110 // sa_family_t + sun_path[108]
	if addrlen <= 2 || addrlen > sizeofSockaddrUn || addr == 0 || addr > math.MaxInt64-sizeofSockaddrUn {
		return "", false
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(tid) + "/mem")
	if err != nil {
		return "", false
	}
	defer mem.Close()
	buf := make([]byte, addrlen)
	if n, _ := mem.ReadAt(buf, int64(addr)); n != len(buf) {
		return "", false
	}
	if binary.NativeEndian.Uint16(buf) != unix.AF_UNIX {
		return "", false
	}
	p := buf[2:]
	if p[0] == 0 {
		return "", false // abstract: a name shared with the host, always logged
	}
	for i, c := range p {
		if c == 0 {
			p = p[:i]
			break
		}
	}
	return string(p), true
}

// statWait bounds the existence check: a path on a hung network or FUSE
// file system must not stall the supervisor, which answers every other
// child's calls. (A variable for the tests of what is missing, which a
// loaded machine can make wait longer.)
var statWait = 50 * time.Millisecond

// statSlot lets one check run at a time: a check still stuck after
// statWait keeps it, and the later ones log without looking.
var statSlot = make(chan struct{}, 1)

// missingWithin reports whether path does not exist (ENOENT, or ENOTDIR on
// the way), settled within wait.
func missingWithin(path string, wait time.Duration) bool {
	select {
	case statSlot <- struct{}{}:
	default:
		return false
	}
	res := make(chan bool, 1)
	go func() {
		defer func() { <-statSlot }()
		_, err := os.Stat(path)
		res <- errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case missing := <-res:
		return missing
	case <-t.C:
		return false
	}
}
