package pathwatch

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/violations"
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
	// protected: a protected path (hook protection, control files), not
	// a denied one.
	protected bool
}

// Watch is what the path observer looks for, by identity, not by
// spelling: a name in a directory (a mask, a protected file), a directory
// inside a protected one, a file (what an open follows links to). Each
// notification then costs a read of the path and a statx or two, and
// the paths are worked out only for what matches.
type Watch struct {
	arch  seccomp.Arch
	names map[nameKey]watched
	// dirs are the directories in protected trees: any name in them.
	dirs map[fileID]watched
	// files are the masks and protected files themselves.
	files map[fileID]watched
	// places bounds the looks under way at once; the command's own
	// threads have places of their own (ownPlaces), so that its calls
	// never wait behind a flood of its children's.
	places, ownPlaces *seccomp.Places
	// own tells the command's threads (nil: nobody's are told apart).
	own func(tid int) bool
	// procDev is /proc's device: a directory there is resolved by walking.
	procDev uint64
	// born is when w was made; slowUntil, a time since born (see now), is
	// when the looks come back onto the loop (see Seen), and looking when
	// the look on the loop under way started (0: none).
	born               time.Time
	slowUntil, looking atomic.Int64
	slowFor            time.Duration
}

// SetOwn tells w the command's threads, whose calls are resolved apart
// from its children's. Set once, before the first notification.
func (w *Watch) SetOwn(own func(tid int) bool) {
	w.own = own
}

// maxProtectedDirs bounds the walk of the protected trees at start.
const maxProtectedDirs = 4096

// New is the path observer of masks and protected, as the init stage
// sees them now (identities are read here, once).
func New(arch seccomp.Arch, masks []policy.Mask, protected []initcfg.Watched) *Watch {
	w := &Watch{arch: arch, names: map[nameKey]watched{}, dirs: map[fileID]watched{}, files: map[fileID]watched{},
		places: seccomp.NewObserverPlaces(observerPlaces), ownPlaces: seccomp.NewObserverPlaces(observerOwnPlaces), born: time.Now(), slowFor: slowFor}
	if id, ok := statID("/proc", true); ok {
		w.procDev = id.dev
	}
	add := func(path string, it watched) {
		if parent, ok := statID(filepath.Dir(path), true); ok {
			w.names[nameKey{parent, filepath.Base(path)}] = it
		}
		if id, ok := statID(path, false); ok {
			w.files[id] = it
		}
	}
	for _, m := range masks {
		add(m.Path, watched{m.Path, m.Entry, m.Source, false})
	}
	for _, p := range protected {
		it := watched{p.Path, p.Entry, p.Source, true}
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
				w.dirs[id] = watched{path, p.Entry, p.Source, true}
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

// Seen says whether n is one of the observer's syscalls (not the network
// supervisor's), and then answers it through r (the syscall goes on) once
// it has logged it if it names a denied or protected path.
//
// Most paths are read and resolved here, on the loop that receives the
// notifications, at the cost of a statx or two: handing each call to
// another thread would cost every file call of the sandbox about 20 µs
// more. But reading the path waits for the caller's memory map, which a
// child can keep busy (forking from many threads with gigabytes mapped),
// and that loop answers every other call, the command's included. So a
// look here that takes longer than slowLook (or one that the loop's watch
// leaves behind: it is still timed when it ends) makes every call for the
// next slowFor, and as long as looks stay slow, be looked at off the
// loop: however many threads a child makes its calls from, the loop waits
// for one of them at a time, and then not again until the looks are fast
// for slowFor. Off the loop, and for the paths that must be walked one
// component at a time (deep, through links: made to be costly, they hold
// their own call, not every other process's), the looks under way at once
// are bounded (one waiting goroutine for each blocked thread of the
// sandbox beyond), the command's own apart from its children's, so that
// its calls never wait behind a flood of theirs.
func (w *Watch) Seen(v *violations.Log, n seccomp.Notification, r seccomp.Reply) bool {
	name := seccomp.SyscallName(w.arch, n.Nr)
	if _, ok := pathArgs[name]; !ok {
		return false
	}
	if !w.slow() {
		start := w.now()
		w.looking.Store(int64(start))
		sure := w.check(v, n, name, false)
		w.looking.CompareAndSwap(int64(start), 0)
		w.timed(start)
		if sure {
			_ = r.Continue()
			return true
		}
	}
	places := w.places
	if w.own != nil && w.own(n.Pid) {
		places = w.ownPlaces
	}
	r.OffLoop(func() {
		if !places.Take(n.Pid, r) {
			return // answered meanwhile: its caller had a signal to take, or is gone
		}
		defer places.Release()
		start := w.now()
		w.check(v, n, name, true)
		w.timed(start)
		_ = r.Continue()
	})
	return true
}

// slowLook is how long a look may take before the looks go off the loop
// for slowFor (see Seen): reading a path and a statx or two take a few
// microseconds, a wait for a busy memory map milliseconds to seconds.
const (
	slowLook = time.Millisecond
	slowFor  = time.Second
)

// now is the time since w was made, never 0.
func (w *Watch) now() time.Duration { return time.Since(w.born) + 1 }

// slow says whether a look that starts now goes off the loop: the looks
// were slow lately, or one on the loop has been under way for longer than
// slowLook (its turn left behind, or about to be: the calls after it must
// not wait for it, each in turn).
func (w *Watch) slow() bool {
	now := w.now()
	if l := time.Duration(w.looking.Load()); l != 0 && now-l > slowLook {
		w.slowUntil.Store(int64(now + w.slowFor))
		return true
	}
	return now < time.Duration(w.slowUntil.Load())
}

// timed notes a look that started at start: one slower than slowLook
// sends the looks off the loop for slowFor from now.
func (w *Watch) timed(start time.Duration) {
	if now := w.now(); now-start > slowLook {
		w.slowUntil.Store(int64(now + w.slowFor))
	}
}

// observerPlaces bounds the children's calls looked at at once, and
// observerOwnPlaces the command's own.
const (
	observerPlaces    = 32
	observerOwnPlaces = 8
)

// check logs n when it names a denied or protected path. Without walk it
// logs nothing and says false when a path needs resolving component by
// component (see quick).
func (w *Watch) check(v *violations.Log, n seccomp.Notification, name string, walk bool) bool {
	type found struct {
		it     watched
		exists bool
	}
	var hits []found
	for _, pa := range pathArgs[name] {
		dirfd := unix.AT_FDCWD
		if pa[0] >= 0 {
			dirfd = int(int32(n.Args[pa[0]]))
		}
		p, ok := readPath(n.Pid, n.Args[pa[1]])
		if !ok {
			continue
		}
		it, exists, hit, sure := w.quick(n.Pid, dirfd, p, follows[name])
		if !sure {
			if !walk {
				return false
			}
			it, exists, hit = w.lookup(n.Pid, dirfd, p, follows[name])
		}
		if hit {
			hits = append(hits, found{it, exists})
		}
	}
	if len(hits) == 0 {
		return true
	}
	comm := "?"
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(n.Pid) + "/comm"); err == nil {
		comm = strings.TrimSpace(string(b))
	}
	for _, h := range hits {
		op := pathOp(name, n)
		if op == "truncate" && name != "truncate" && !h.exists {
			op = "write" // O_TRUNC of nothing writes a new file
		}
		v.LogFile(violations.File{Comm: comm, Exe: violations.ExeOf("/proc/" + strconv.Itoa(n.Pid)), Op: op, Path: h.it.path, Entry: h.it.entry, Source: h.it.source, Protected: h.it.protected})
	}
	return true
}

// quick resolves p with the kernel, from this process, when that is
// sure to be what the caller gets: when no component of the directory is
// a link (of any kind: a link's text, /proc/self's above all, would be
// read as pid 1's), it says no "self", it is not in /proc and it is at
// most maxQuickDepth deep. A relative p starts from the caller's own
// working directory or dirfd, reached through /proc/TID (which names the
// caller's object whoever follows it). sure is false otherwise, and when an
// open's last component is a link, or the last component cannot be
// looked at (not ENOENT): the caller then walks it (lookup).
func (w *Watch) quick(tid, dirfd int, p string, follow bool) (it watched, exists, hit, sure bool) {
	if strings.Contains(p, "self") {
		return watched{}, false, false, false
	}
	start := "/"
	if !filepath.IsAbs(p) {
		start = "/proc/" + strconv.Itoa(tid) + "/cwd"
		if dirfd != unix.AT_FDCWD {
			start = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(dirfd)
		}
	}
	t := strings.TrimRight(strings.TrimLeft(p, "/"), "/")
	if t == "" {
		return watched{}, false, false, true // "/" or the start itself
	}
	comps := strings.Split(t, "/")
	name := comps[len(comps)-1]
	if name == "." || name == ".." {
		return watched{}, false, false, true
	}
	if len(comps) > maxQuickDepth {
		return watched{}, false, false, false
	}
	// Absolute: from /, as pid 1 and the caller share it. Relative: each
	// statx through the magic link itself (the kernel follows it to the
	// caller's directory, whoever asks), not through a descriptor opened
	// on it: an open and a close more for every path cost more than the
	// looks they would save.
	base, dir := unix.AT_FDCWD, ""
	if start != "/" {
		dir = start
	}
	var st unix.Statx_t
	walked := false // st is the directory's: its last component, not a link
	for _, c := range comps[:len(comps)-1] {
		if c == "" || c == "." {
			continue
		}
		dir += "/" + c
		if unix.Statx(base, dir, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return watched{}, false, false, false // a link on the way, or nothing there
		}
		walked = true
	}
	if dir == "" {
		dir = "/"
	}
	// "/" or the caller's own directory (through its magic link, which
	// only a statx that follows it reaches).
	if !walked && (unix.Statx(base, dir, unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR) {
		return watched{}, false, false, false
	}
	parent := fileID{unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino}
	if parent.dev == w.procDev {
		return watched{}, false, false, false
	}
	var fs unix.Statx_t
	err := unix.Statx(base, strings.TrimSuffix(dir, "/")+"/"+name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &fs)
	if err != nil && err != unix.ENOENT {
		// Not "nothing there": the path through /proc/TID is longer than
		// the caller's (ENAMETOOLONG near PATH_MAX), say. The walk has no
		// length limit.
		return watched{}, false, false, false
	}
	there := err == nil
	if there && follow && fs.Mode&unix.S_IFMT == unix.S_IFLNK {
		return watched{}, false, false, false
	}
	if it, ok := w.names[nameKey{parent, name}]; ok {
		return it, there, true, true
	}
	if it, ok := w.dirs[parent]; ok {
		return watched{filepath.Join(it.path, name), it.entry, it.source, it.protected}, there, true, true
	}
	if there {
		if it, ok := w.files[fileID{unix.Mkdev(fs.Dev_major, fs.Dev_minor), fs.Ino}]; ok {
			return it, true, true, true
		}
	}
	return watched{}, there, false, true
}

// maxQuickDepth bounds the components quick checks one by one (each a
// statx of the whole prefix); deeper paths are walked by a worker.
const maxQuickDepth = 64

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

// lookup resolves p as tid would
// (relative to dirfd, or to tid's working directory) and says what
// watched thing it names: the name in its directory, a directory inside a
// protected tree, or (follow) the file a last link leads to. exists says
// whether the path names anything now.
func (w *Watch) lookup(tid, dirfd int, p string, follow bool) (it watched, exists, ok bool) {
	r := resolver{tid: tid}
	start := "/proc/" + strconv.Itoa(tid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		start = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(dirfd)
	}
	if filepath.IsAbs(p) {
		start = "/"
	}
	// Through the magic link: the caller's directory itself, wherever it is.
	dir, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return watched{}, false, false
	}
	defer func() { unix.Close(dir) }()
	for {
		var name string
		if dir, name, ok = r.parent(dir, p); !ok {
			return watched{}, false, false
		}
		id, there := fdID(dir, name, false)
		parent, pok := fdID(dir, "", false)
		if pok {
			if it, hit := w.names[nameKey{parent, name}]; hit {
				return it, there, true
			}
			if it, hit := w.dirs[parent]; hit {
				return watched{filepath.Join(it.path, name), it.entry, it.source, it.protected}, there, true
			}
		}
		if there {
			if it, hit := w.files[id]; hit {
				return it, true, true
			}
		}
		// An open follows a last link: go on with what it says, from
		// the directory it is in (a magic link of /proc: the kernel
		// follows it to the object itself).
		target, link := r.linkText(dir, name)
		if !follow || !link {
			return watched{}, there, false
		}
		if onProc(dir) {
			if id, ok := fdID(dir, name, true); ok {
				if it, hit := w.files[id]; hit {
					return it, true, true
				}
				return watched{}, true, false
			}
			return watched{}, false, false
		}
		if r.links++; r.links > 40 {
			return watched{}, false, false
		}
		p = target
	}
}

// resolver resolves paths as tid would, from this process, through
// descriptors: one openat per component, so a deep path costs no more per
// step than a shallow one, and no length limit applies to what is walked.
// Links are followed by their text, with /proc/self and /proc/thread-self
// read as tid's wherever they are met (/dev/fd, //proc/./self, a link to
// it, .. back into /proc); a link of /proc's (cwd, root, fd/N: magic, they
// name the object itself) is followed by the kernel.
type resolver struct {
	tid   int
	links int
	steps int
}

// maxResolveSteps bounds a resolution: each of 40 links may add PATH_MAX of
// components, which the caller's kernel walks too; past it the path is not
// matched (and is refused or allowed by the kernel as always).
const maxResolveSteps = 4096

// parent walks every component of p but the last from dir (an O_PATH
// descriptor, which it consumes) and returns the directory reached and
// the last component.
func (r *resolver) parent(dir int, p string) (int, string, bool) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return dir, "", false // "/" itself
	}
	if strings.HasPrefix(p, "/") {
		root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return dir, "", false
		}
		unix.Close(dir)
		dir = root
	}
	comps := strings.Split(p, "/")
	name := comps[len(comps)-1]
	if name == "." || name == ".." {
		return dir, "", false
	}
	comps = comps[:len(comps)-1]
	for len(comps) > 0 {
		if r.steps++; r.steps > maxResolveSteps {
			return dir, "", false
		}
		c := comps[0]
		comps = comps[1:]
		if c == "" || c == "." {
			continue
		}
		if (c == "self" || c == "thread-self") && isProcRoot(dir) {
			if c == "thread-self" {
				comps = append([]string{"task", strconv.Itoa(r.tid)}, comps...)
			}
			c = strconv.Itoa(r.tid)
		}
		if target, link := r.linkText(dir, c); link && !onProc(dir) {
			if r.links++; r.links > 40 {
				return dir, "", false
			}
			if strings.HasPrefix(target, "/") {
				root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return dir, "", false
				}
				unix.Close(dir)
				dir = root
			}
			comps = append(strings.Split(target, "/"), comps...)
			continue
		}
		// A directory, .., or a magic link of /proc: the kernel steps.
		next, err := unix.Openat(dir, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return dir, "", false
		}
		unix.Close(dir)
		dir = next
	}
	return dir, name, true
}

// linkText is the text of the symbolic link name in dir, if it is one.
func (r *resolver) linkText(dir int, name string) (string, bool) {
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", false
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil || n <= 0 {
		return "", false
	}
	return string(buf[:n]), true
}

// procRootIno is the inode of procfs's root directory.
const procRootIno = 1

func isProcRoot(dir int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(dir, &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
		return false
	}
	var s unix.Stat_t
	return unix.Fstat(dir, &s) == nil && s.Ino == procRootIno
}

func onProc(dir int) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(dir, &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
}

// fdID is the identity of name in dir ("" : dir itself), the last link
// followed when follow is set; a mask's node is not asked.
func fdID(dir int, name string, follow bool) (fileID, bool) {
	flags := unix.AT_STATX_DONT_SYNC
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if !follow {
		flags |= unix.AT_SYMLINK_NOFOLLOW
	}
	var st unix.Statx_t
	if err := unix.Statx(dir, name, flags, unix.STATX_INO, &st); err != nil {
		return fileID{}, false
	}
	return fileID{unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino}, true
}

// pathBufs holds readPath's buffers: a notified call reads one or two
// paths, and a fresh PATH_MAX each time was garbage for every file call of
// the sandbox.
var pathBufs = sync.Pool{New: func() any { return new([unix.PathMax]byte) }}

// testHookReadPath, when set, runs as readPath starts.
var testHookReadPath func()

// readPath reads the NUL-terminated path at addr in tid's memory.
func readPath(tid int, addr uint64) (string, bool) {
	if testHookReadPath != nil {
		testHookReadPath()
	}
	if addr == 0 {
		return "", false
	}
	bp := pathBufs.Get().(*[unix.PathMax]byte)
	defer pathBufs.Put(bp)
	buf := bp[:]
	// First to the end of the page the path starts in: most paths end
	// there, and one page is one walk of the caller's page tables (the
	// next page may not even be mapped). The rest only when no NUL is in
	// it.
	first := min(int((addr|4095)+1-addr), len(buf))
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(first)}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: first}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == nil && n == first && first < len(buf) && strings.IndexByte(unsafe.String(&buf[0], n), 0) < 0 {
		local[0].Base, local[0].Len = &buf[first], uint64(len(buf)-first)
		remote[0].Base, remote[0].Len = uintptr(addr)+uintptr(first), len(buf)-first
		if m, err := unix.ProcessVMReadv(tid, local, remote, 0); err == nil {
			n += m
		}
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
