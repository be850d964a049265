package initbin

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open opens grok-sandbox-init for bwrap to run as the init stage, when
// it lies beside the running launcher's executable (its real path, links
// resolved), is a regular file (not a symbolic link) of that executable's
// owner that nobody else may write and this user may execute, and records
// the same build (SameBuild) while the launcher's own record pins its
// source (Pinned). Else fd is -1 and why says what was missing: the
// launcher then hands over its own executable, which runs the same init
// stage. Everything is checked on the descriptor that is handed over, so
// a rename cannot swap the file between the check and bwrap's exec of it;
// its owner writing it in place meanwhile can (a file not yet running is
// not kept from writes, as a running program is), and an init stage of
// another layout then refuses the config (initcfg's fingerprint).
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
	// An O_PATH descriptor first: nothing of the file is opened (a device
	// or a FIFO named so has no say) until it is known to be a regular
	// file; it is then reopened for reading through that very descriptor.
	pathFD, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, "no " + path
	}
	if err != nil {
		return -1, "cannot open " + path + ": " + err.Error()
	}
	defer unix.Close(pathFD)
	fail := func(why string) (int, string) { return -1, path + " " + why }
	var st unix.Stat_t
	if err := unix.Fstat(pathFD, &st); err != nil {
		return fail("cannot be checked: " + err.Error())
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fail("is a symbolic link")
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fail("is not a regular file")
	case st.Uid != self.Uid:
		return fail("is not owned by grok-sandbox's owner")
	case st.Mode&0o022 != 0:
		return fail("may be written by others than its owner")
	}
	// Executable by this user, as bwrap's exec will ask: a mode with an
	// execute bit for someone else only would fail the launch instead of
	// leaving grok-sandbox-init out.
	if !executable(pathFD, &st) {
		return fail("is not executable by this user")
	}
	fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(pathFD), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fail("cannot be read: " + err.Error())
	}
	fail = func(why string) (int, string) {
		unix.Close(fd)
		return -1, path + " " + why
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

// executable says whether this user may execute the file pathFD is, as
// the kernel will decide (faccessat2, Linux 5.8); where that call is
// missing or refused (an older kernel, a container's seccomp profile), by
// its mode bits for this user's effective ids, which ignore ACLs: a wrong
// yes then fails the launch at bwrap's exec, a wrong no leaves the file
// out.
func executable(pathFD int, st *unix.Stat_t) bool {
	err := unix.Faccessat2(pathFD, "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS)
	if err != unix.ENOSYS && err != unix.EPERM {
		return err == nil
	}
	groups, _ := unix.Getgroups()
	return modeAllows(st.Mode, st.Uid, st.Gid, unix.Geteuid(), unix.Getegid(), groups)
}

// modeAllows says whether mode (of a file of owner uid and group gid)
// lets a process of effective ids euid and egid, in groups, execute it.
func modeAllows(mode, uid, gid uint32, euid, egid int, groups []int) bool {
	switch {
	case euid == 0:
		return mode&0o111 != 0
	case uint32(euid) == uid:
		return mode&0o100 != 0
	}
	member := uint32(egid) == gid
	for _, g := range groups {
		member = member || uint32(g) == gid
	}
	if member {
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}
