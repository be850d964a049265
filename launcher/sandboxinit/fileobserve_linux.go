package sandboxinit

// The path observer: what never reaches a mask's node (a rename, unlink or
// hard link of the mask itself: the kernel refuses it at the mount point,
// EBUSY or EXDEV, before asking the file system) and every write to a
// protected path (a read-only bind: EROFS, decided by the VFS) is seen by
// a seccomp filter on the command that sends the syscalls that change a
// name in a directory, and the opens that may write, to the init stage.
// It reads the paths, logs those that name a denied or protected path and
// lets every syscall go on: the kernel refuses them as before. Reads, stats
// and every other syscall never leave the kernel.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/seccomp"
)

// fileID is a file's identity.
type fileID struct{ dev, ino uint64 }

// nameKey is a name in a directory: what a syscall that changes a name
// acts on.
type nameKey struct {
	dir  fileID
	name string
}

// watched is what a match reports.
type watched struct {
	path, entry, source string
}

// pathWatch is what the path observer looks for, by identity, not by
// spelling: a name in a directory (a mask, a protected file), a directory
// inside a protected one, a file (what an open follows links to). Each
// notification then costs a read of the path and a statx or two, and
// the paths are worked out only for what matches.
type pathWatch struct {
	arch  seccomp.Arch
	names map[nameKey]watched
	// dirs are the directories in protected trees: any name in them.
	dirs map[fileID]watched
	// files are the masks and protected files themselves.
	files map[fileID]watched
}

// maxProtectedDirs bounds the walk of the protected trees at start.
const maxProtectedDirs = 4096

func newPathWatch(arch seccomp.Arch, masks []policy.Mask, protected []Watched) *pathWatch {
	w := &pathWatch{arch: arch, names: map[nameKey]watched{}, dirs: map[fileID]watched{}, files: map[fileID]watched{}}
	add := func(path string, it watched) {
		if parent, ok := statID(filepath.Dir(path), true); ok {
			w.names[nameKey{parent, filepath.Base(path)}] = it
		}
		if id, ok := statID(path, false); ok {
			w.files[id] = it
		}
	}
	for _, m := range masks {
		add(m.Path, watched{m.Path, m.Entry, m.Source})
	}
	for _, p := range protected {
		it := watched{p.Path, p.Entry, p.Source}
		add(p.Path, it)
		n := 0
		_ = filepath.WalkDir(p.Path, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if n++; n > maxProtectedDirs {
				return filepath.SkipAll
			}
			if id, ok := statID(path, false); ok {
				w.dirs[id] = watched{path, p.Entry, p.Source}
			}
			return nil
		})
	}
	return w
}

// statID is path's identity, following a last link when follow is set;
// AT_STATX_DONT_SYNC: a mask's node is not asked.
func statID(path string, follow bool) (fileID, bool) {
	flags := unix.AT_STATX_DONT_SYNC
	if !follow {
		flags |= unix.AT_SYMLINK_NOFOLLOW
	}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, flags, unix.STATX_INO, &st); err != nil {
		return fileID{}, false
	}
	return fileID{unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino}, true
}

// pathArgs are, per syscall, the indexes of (dirfd, path) pairs that name
// what the syscall changes (-1: AT_FDCWD implied).
var pathArgs = map[string][][2]int{
	"rename":    {{-1, 0}, {-1, 1}},
	"renameat":  {{0, 1}, {2, 3}},
	"renameat2": {{0, 1}, {2, 3}},
	"unlink":    {{-1, 0}},
	"unlinkat":  {{0, 1}},
	"rmdir":     {{-1, 0}},
	"link":      {{-1, 0}, {-1, 1}},
	"linkat":    {{0, 1}, {2, 3}},
	"symlink":   {{-1, 1}},
	"symlinkat": {{1, 2}},
	"mkdir":     {{-1, 0}},
	"mkdirat":   {{0, 1}},
	"mknod":     {{-1, 0}},
	"mknodat":   {{0, 1}},
	"truncate":  {{-1, 0}},
	"open":      {{-1, 0}},
	"openat":    {{0, 1}},
	"creat":     {{-1, 0}},
}

// follows are the syscalls that act on what a last link points to.
var follows = map[string]bool{"open": true, "openat": true, "creat": true, "truncate": true}

// seen logs n when it names a denied or protected path, and says whether
// n is one of the observer's syscalls (not the network supervisor's).
func (w *pathWatch) seen(v *violations, n seccomp.Notification) bool {
	name := seccomp.SyscallName(w.arch, n.Nr)
	pairs, ok := pathArgs[name]
	if !ok {
		return false
	}
	op := pathOp(name, n)
	for _, pa := range pairs {
		dirfd := unix.AT_FDCWD
		if pa[0] >= 0 {
			dirfd = int(int32(n.Args[pa[0]]))
		}
		it, exists, ok := w.lookup(n.Pid, dirfd, n.Args[pa[1]], follows[name])
		if !ok {
			continue
		}
		if op == "truncate" && name != "truncate" && !exists {
			op = "write" // O_TRUNC of nothing writes a new file
		}
		comm := "?"
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(n.Pid) + "/comm"); err == nil {
			comm = strings.TrimSpace(string(b))
		}
		v.logFile(fileViolation{Comm: comm, Op: op, Path: it.path, Entry: it.entry, Source: it.source})
	}
	return true
}

func pathOp(name string, n seccomp.Notification) string {
	switch name {
	case "rename", "renameat", "renameat2":
		return "rename"
	case "unlink", "unlinkat", "rmdir":
		return "remove"
	case "link", "linkat", "symlink", "symlinkat":
		return "link"
	case "mkdir", "mkdirat", "mknod", "mknodat":
		return "create"
	case "truncate", "creat":
		return "truncate"
	case "open":
		if n.Args[1]&unix.O_TRUNC != 0 {
			return "truncate"
		}
	case "openat":
		if n.Args[2]&unix.O_TRUNC != 0 {
			return "truncate"
		}
	}
	return "write"
}

// lookup reads the path at addr in tid's memory, resolves it as tid would
// (relative to dirfd, or to tid's working directory) and says what
// watched thing it names: the name in its directory, a directory inside a
// protected tree, or (follow) the file a last link leads to. exists says
// whether the path names anything now.
func (w *pathWatch) lookup(tid, dirfd int, addr uint64, follow bool) (it watched, exists, ok bool) {
	p, ok := readPath(tid, addr)
	if !ok {
		return watched{}, false, false
	}
	base := "/proc/" + strconv.Itoa(tid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		base = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(dirfd)
	}
	if !filepath.IsAbs(p) {
		// Through the magic link: the directory itself, wherever it is.
		p = base + "/" + p
	}
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return watched{}, false, false // "/" itself
	}
	dir, name := p[:i], p[i+1:]
	if name == "" || name == "." || name == ".." {
		return watched{}, false, false
	}
	// The directory as the caller reaches it: /proc/self met anywhere on
	// the way (/dev/fd, //proc/./self, a link to it, .. back into /proc)
	// is the caller's.
	if dir, ok = resolveAs(tid, dir); !ok {
		return watched{}, false, false
	}
	p = filepath.Join(dir, name)
	target, there := statID(p, follow)
	if parent, ok := statID(dir, true); ok {
		if it, hit := w.names[nameKey{parent, name}]; hit {
			return it, there, true
		}
		if it, hit := w.dirs[parent]; hit {
			return watched{filepath.Join(it.path, name), it.entry, it.source}, there, true
		}
	}
	if there {
		if it, hit := w.files[target]; hit {
			return it, true, true
		}
	}
	return watched{}, there, false
}

// readPath reads the NUL-terminated path at addr in tid's memory.
func readPath(tid int, addr uint64) (string, bool) {
	if addr == 0 {
		return "", false
	}
	buf := make([]byte, unix.PathMax)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == unix.EFAULT {
		// The page after a short path may be unmapped: read to its end.
		end := (addr | 4095) + 1
		remote[0].Len = int(end - addr)
		local[0].Len = uint64(end - addr)
		n, err = unix.ProcessVMReadv(tid, local, remote, 0)
	}
	if err != nil {
		// process_vm_readv refused (a base filter under restrict_network
		// refuses it to everyone): /proc/TID/mem, as the kernel allows.
		mem, oerr := os.Open("/proc/" + strconv.Itoa(tid) + "/mem")
		if oerr != nil {
			return "", false
		}
		n, _ = mem.ReadAt(buf, int64(addr))
		mem.Close()
	}
	if n <= 0 {
		return "", false
	}
	i := strings.IndexByte(unsafe.String(&buf[0], n), 0)
	if i <= 0 {
		return "", false
	}
	return string(buf[:i]), true
}

// magicLink matches /proc/PID/{cwd,root,exe,fd/N} and the same under
// /proc/PID/task/TID: links the kernel follows to the object itself.
var magicLink = regexp.MustCompile(`^/proc/[0-9]+(/task/[0-9]+)?/(cwd|root|exe|fd/[0-9]+)$`)

// resolveAs resolves dir (absolute) as tid would and returns a spelling of
// the same directory that this process resolves the same way: every link
// followed by its text, /proc/self and /proc/thread-self read as tid's,
// and a magic link of /proc replaced by what it names (kept as it is when
// that text does not name the same file: a deleted directory, one out of
// reach).
func resolveAs(tid int, dir string) (string, bool) {
	self := "/proc/" + strconv.Itoa(tid)
	comps := strings.Split(dir, "/")
	cur := "/"
	for links := 0; len(comps) > 0; {
		c := comps[0]
		comps = comps[1:]
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			cur = filepath.Dir(cur)
			continue
		case cur == "/proc" && c == "self":
			cur = self
			continue
		case cur == "/proc" && c == "thread-self":
			cur = self + "/task/" + strconv.Itoa(tid)
			continue
		}
		next := filepath.Join(cur, c)
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, next, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			cur = next // a directory, or nothing the caller could reach either
			continue
		}
		if links++; links > 40 {
			return "", false // ELOOP for the caller too
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		if magicLink.MatchString(next) {
			if a, ok := statID(next, true); ok && filepath.IsAbs(target) {
				if b, ok := statID(target, true); ok && a == b {
					cur = filepath.Clean(target)
					continue
				}
			}
			cur = next
			continue
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		comps = append(strings.Split(target, "/"), comps...)
	}
	return cur, true
}
