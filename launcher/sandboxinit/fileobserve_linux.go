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
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/seccomp"
)

// pathWatch is what the path observer looks for.
type pathWatch struct {
	arch      seccomp.Arch
	masks     map[string]policy.Mask
	protected []Watched
}

func newPathWatch(arch seccomp.Arch, masks []policy.Mask, protected []Watched) *pathWatch {
	w := &pathWatch{arch: arch, masks: map[string]policy.Mask{}, protected: protected}
	for _, m := range masks {
		w.masks[m.Path] = m
	}
	return w
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

// seen logs n when it names a denied or protected path, and says whether
// n is one of the observer's syscalls (not the network supervisor's).
func (w *pathWatch) seen(v *violations, n seccomp.Notification) bool {
	name := seccomp.SyscallName(w.arch, n.Nr)
	pairs, ok := pathArgs[name]
	if !ok {
		return false
	}
	op := pathOp(name, n)
	comm := ""
	for _, pa := range pairs {
		dirfd := unix.AT_FDCWD
		if pa[0] >= 0 {
			dirfd = int(int32(n.Args[pa[0]]))
		}
		path, ok := tracedPath(n.Pid, dirfd, n.Args[pa[1]], w.inMask)
		if !ok {
			continue
		}
		entry, source, hit := w.match(path, op)
		if !hit {
			continue
		}
		if _, mask := w.masks[path]; !mask && op == "truncate" && name != "truncate" {
			// O_TRUNC truncates only what is there; otherwise it writes
			// a new file.
			if _, err := os.Lstat(path); err != nil {
				op = "write"
			}
		}
		if comm == "" {
			comm = "?"
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(n.Pid) + "/comm"); err == nil {
				comm = strings.TrimSpace(string(b))
			}
		}
		v.logFile(fileViolation{Comm: comm, Op: op, Path: path, Entry: entry, Source: source})
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
	case "truncate":
		return "truncate"
	case "creat":
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

// inMask says whether path is a mask or lies in one.
func (w *pathWatch) inMask(path string) bool {
	for p := path; ; p = filepath.Dir(p) {
		if _, ok := w.masks[p]; ok {
			return true
		}
		if p == "/" || p == "." {
			return false
		}
	}
}

// match says which entry path violates under op.
func (w *pathWatch) match(path, op string) (entry, source string, ok bool) {
	if m, hit := w.masks[path]; hit {
		// Writes never reach a mask's node either: its mount is
		// read-only, and the kernel says so first.
		return m.Entry, m.Source, true
	}
	for _, p := range w.protected {
		if policy.Within(path, p.Path) {
			return p.Entry, p.Source, true
		}
	}
	return "", "", false
}

// tracedPath reads the path at addr in tid's memory and makes it absolute
// against dirfd (AT_FDCWD: its working directory), with the directories
// above it resolved (the last component is what the syscall acts on, not
// what it may point to).
func tracedPath(tid, dirfd int, addr uint64, within func(string) bool) (string, bool) {
	if addr == 0 {
		return "", false
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(tid) + "/mem")
	if err != nil {
		return "", false
	}
	buf := make([]byte, unix.PathMax)
	n, _ := mem.ReadAt(buf, int64(addr))
	mem.Close()
	i := strings.IndexByte(string(buf[:n]), 0)
	if i <= 0 {
		return "", false
	}
	p := string(buf[:i])
	if !filepath.IsAbs(p) {
		base := "/proc/" + strconv.Itoa(tid) + "/cwd"
		if dirfd != unix.AT_FDCWD {
			base = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(dirfd)
		}
		dir, err := os.Readlink(base)
		if err != nil || !filepath.IsAbs(dir) {
			return "", false
		}
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if p == "/" {
		return p, true
	}
	if dir, err := evalParents(filepath.Dir(p), within); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	return p, true
}

// evalParents is filepath.EvalSymlinks of dir, but dir as it is when it
// lies in a mask (within says so): walking into a mask would ask its node,
// and the observer logs the threads of the init stage no more than any.
func evalParents(dir string, within func(string) bool) (string, error) {
	if within != nil && within(dir) {
		return dir, nil
	}
	return filepath.EvalSymlinks(dir)
}
