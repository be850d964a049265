package initbin

import (
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// Open opens grok-sandbox-init for bwrap to run as the init stage, when
// it lies beside the running launcher's executable (its real path, links
// resolved), is a regular file of that executable's owner that nobody else
// may write, and records the same build (SameBuild) while the launcher's
// own record pins its source (Pinned). Else fd is -1 and why says what
// was missing: the launcher then hands over its own executable, which
// runs the same init stage. Everything is checked on the descriptor that
// is handed over, so the file cannot be swapped between the check and
// bwrap's exec of it.
func Open() (fd int, why string) {
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return -1, "this build records no build information"
	}
	if ok, why := Pinned(own); !ok {
		return -1, why
	}
	exe, err := os.Executable()
	if err != nil {
		return -1, "cannot find grok-sandbox's own executable: " + err.Error()
	}
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &self); err != nil {
		return -1, "cannot stat grok-sandbox's own executable: " + err.Error()
	}
	path := filepath.Join(filepath.Dir(exe), Name)
	fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, "no " + path + " (" + err.Error() + ")"
	}
	fail := func(why string) (int, string) {
		unix.Close(fd)
		return -1, path + " " + why
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("cannot be checked: " + err.Error())
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fail("is not a regular file")
	case st.Uid != self.Uid:
		return fail("is not owned by grok-sandbox's owner")
	case st.Mode&0o022 != 0:
		return fail("may be written by others than its owner")
	case st.Mode&0o111 == 0:
		return fail("is not executable")
	}
	theirs, err := Read(preader(fd))
	if err != nil {
		return fail("has no readable Go build record: " + err.Error())
	}
	if !SameBuild(own, theirs) {
		return fail("is of another build than grok-sandbox (go version -m shows both)")
	}
	return fd, ""
}

// preader reads a descriptor at offsets (an *os.File would close it when
// collected).
type preader int

func (p preader) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		k, err := unix.Pread(int(p), b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			return n, io.ErrUnexpectedEOF
		}
		n += k
	}
	return n, nil
}
