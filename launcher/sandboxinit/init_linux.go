package sandboxinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"grok-sandbox/launcher/eventlog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/seccomp"
)

// Run is grok-sandbox's own stage inside the sandbox: bwrap execs it as
// "/proc/self/fd/12 __sandbox-init FD PROFILE [--masked]", as pid 1 of the
// sandbox's pid namespace, carrying the base seccomp filter. It reads its
// config (the command among it) from FD, then:
//
//  1. makes itself non-dumpable, so that nothing in the sandbox can open
//     its memory, whatever the kernel's ptrace policy;
//  2. when bwrap had no room for every mask, mounts them (with the
//     capabilities bwrap left for this), drops every capability and execs
//     itself again with --masked, so nothing privileged survives;
//  3. checks that every layer it was asked for is in force (the filter,
//     no_new_privs, no capability, the read-only and masked paths) and
//     refuses to start the command otherwise;
//  4. starts the command with no descriptor of grok-sandbox's, under an
//     extra filter when its children must lose the network (and then
//     answers that filter's notifications), reaps every orphan as pid 1
//     must, and exits with the command's status.
func Run(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "grok-sandbox: init: "+format+"\n", a...)
		return ExitRefused
	}
	// The starter stays dumpable until it execs the command (which is
	// dumpable anyway): the init stage writes its uid and gid maps through
	// /proc, whose files of a non-dumpable process only root outside the
	// sandbox may open. Nothing but the init stage and its helpers runs
	// before it execs.
	if len(args) == 1 && args[0] == starterArg {
		return runStarter()
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("cannot make the init stage non-dumpable: %v", err)
	}
	if len(args) == 1 && args[0] == netHelperArg {
		return runNetHelper()
	}
	if len(args) == 2 && args[0] == maskObserverArg {
		return runMaskObserver(args)
	}

	if len(args) < 2 || len(args) > 3 || (len(args) == 3 && args[2] != "--masked") {
		return fail("usage: %s FD PROFILE [--masked]", Command)
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		return fail("bad descriptor %q", args[0])
	}
	masked := len(args) == 3

	data, err := readFD(fd)
	if err != nil {
		return fail("reading the config: %v", err)
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fail("bad config: %v", err)
	}
	if cfg.Path == "" || len(cfg.Args) == 0 {
		return fail("bad config: no command")
	}
	if cfg.Profile != args[1] {
		return fail("bad config: profile %q, command line says %q", cfg.Profile, args[1])
	}

	runtime.LockOSThread()
	if !masked {
		// The staged layers first, then every layer's identity in the
		// view the command will have, then the masks onto it.
		if err := moveStaged(cfg.Binds); err != nil {
			return fail("%v", err)
		}
		if err := verifyIdentity(cfg.Check); err != nil {
			return fail("%v; refusing to start the command", err)
		}
	}
	observer := 0 // the mask observer's pid
	if (len(cfg.Masks) > 0 || len(cfg.Binds) > 0 || cfg.ChildNet) && !masked {
		if err := reserveFDs(); err != nil {
			return fail("%v", err)
		}
		if len(cfg.Masks) > 0 || len(cfg.Binds) > 0 {
			var err error
			if observer, err = mountMasks(cfg.Masks, cfg.Observe != nil && cfg.Observe.Fuse); err != nil {
				return fail("%v", err)
			}
		}
		// The children's private network namespace is made here, while
		// this process still holds the capabilities for it, by a thread
		// that drops them and starts the net helper in it (see
		// childnet_linux.go); the helper outlives the re-exec.
		if cfg.ChildNet {
			if err := startNetHelper(); err != nil {
				fmt.Fprintf(os.Stderr, "grok-sandbox: warning: cannot give the processes the wrapped command starts a private loopback (%v); they get no network at all\n", err)
			}
		}
		starter := 0
		if cfg.User != nil {
			var err error
			if starter, err = forkStarter(cfg.User); err != nil {
				return fail("%v", err)
			}
		}
		if err := dropCapabilities(); err != nil {
			return fail("%v", err)
		}
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return fail("rewinding the config: %v", err)
		}
		argv := []string{"grok-sandbox", Command, args[0], args[1], "--masked"}
		var env []string
		if observer > 0 {
			env = append(env, observerPidEnv+"="+strconv.Itoa(observer))
		}
		if starter > 0 {
			env = append(env, starterPidEnv+"="+strconv.Itoa(starter))
		}
		err := syscall.Exec("/proc/self/exe", argv, env)
		return fail("re-exec after masking: %v", err)
	}
	unix.Close(fd)
	if _, held := heldStarter(); cfg.User != nil && !held {
		return fail("the command must run as uid %d, and its starter is missing; refusing to start it", cfg.User.UID)
	}
	if cfg.Dir != "" {
		// After the masks: a working directory bwrap entered before they
		// were mounted would still reach what they cover.
		if err := unix.Chdir(cfg.Dir); err != nil {
			return fail("cannot enter %s: %v", cfg.Dir, err)
		}
	}
	if err := DropAllCapabilities(); err != nil {
		return fail("%v", err)
	}
	if err := verifyThread(cfg.Check.Filters); err != nil {
		return fail("%v; refusing to start the command", err)
	}
	if err := verifyPaths(cfg.Check); err != nil {
		return fail("%v; refusing to start the command", err)
	}
	// Nothing of grok-sandbox's reaches the command: the descriptors bwrap
	// left (the executable, the event log) stay here only.
	if err := CloseFrom(3); err != nil {
		return fail("cannot close the launcher's descriptors: %v", err)
	}
	events := -1
	if _, err := unix.FcntlInt(uintptr(FDEvents), unix.F_GETFD, 0); err == nil {
		events = FDEvents
	}
	return Supervise(&cfg, "bwrap", events, nil, cfg.Check.Filters, cfg.Env, true)
}

// carriedFDs are the descriptors the init stage's first run makes and
// keeps across its re-exec, at fixed numbers the launcher does not hand
// over.
var carriedFDs = []int{FDNetHelper, FDObserver, FDStarter}

// reserveFDs holds each of carriedFDs with a placeholder (close-on-exec,
// so the re-exec drops what was not replaced), before anything opens a
// descriptor: otherwise an open could land on one of those numbers, and
// placing a channel there would close it (the observer's channel itself
// once: every report of the run was lost, EPIPE).
func reserveFDs() error {
	for _, fd := range carriedFDs {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			return fmt.Errorf("descriptor %d is open already; refusing to start", fd)
		}
		null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open /dev/null: %v", err)
		}
		if null != fd {
			err = unix.Dup3(null, fd, unix.O_CLOEXEC)
			unix.Close(null)
			if err != nil {
				return fmt.Errorf("dup3: %v", err)
			}
		}
	}
	return nil
}

// PlaceFD moves fd onto target without close-on-exec, and closes fd: the
// launcher's descriptors for bwrap, and the init stage's kept across its
// re-exec (one of carriedFDs, held by its placeholder). dup3 replaces what
// target held at once.
func PlaceFD(fd, target int) error {
	if fd == target {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
		return err
	}
	err := unix.Dup3(fd, target, 0)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("dup3: %v", err)
	}
	return nil
}

// readFD reads fd to EOF without wrapping it in an os.File, whose finalizer
// could close it before the re-exec that needs it again.
func readFD(fd int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// maskStaging is where the init stage stages the masks' sources: /dev/shm
// in the sandbox's /dev (mounting over it there changes nothing outside the
// sandbox's mount namespace; a mask under it is refused). The staging tmpfs
// is detached before anything else runs, so afterwards no path reaches the
// sources, in this sandbox or any other.
const maskStaging = "/dev/shm"

// mountMasks covers each masked file or directory with an empty, mode-0000,
// read-only file or directory of a private tmpfs (staged, then detached:
// afterwards no path reaches the sources, in this sandbox or any other).
//
// Each target is opened without following any link on the way
// (RESOLVE_NO_SYMLINKS), checked to be the very file resolution found on
// the host (device and inode), and mounted onto through its descriptor: a
// concurrent sandbox that swapped the path meanwhile (for a link, another
// file, a directory) makes the launch refuse, and can never make this
// mount, or create or truncate, anything anywhere else.
//
// With observe, the sources are the mask observer's nodes, one a mask
// (see maskfs_linux.go); where it cannot start, the tmpfs ones, with a
// warning.
func mountMasks(masks []policy.Mask, observe bool) (observer int, err error) {
	for _, m := range masks {
		if policy.Within(m.Path, maskStaging) {
			return 0, fmt.Errorf("cannot mask %s: the init stage stages masks in %s", m.Path, maskStaging)
		}
	}
	fused := false
	if _, err := unix.FcntlInt(uintptr(FDFuse), unix.F_GETFD, 0); observe && err == nil && len(masks) > 0 {
		if observer, err = startMaskObserver(maskStaging, masks); err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: warning: touches of denied paths will not be logged in this run: %v\n", err)
		} else {
			fused = true
		}
	}
	defer unix.Unmount(maskStaging, unix.MNT_DETACH)
	file, dir := maskStaging+"/file", maskStaging+"/dir"
	if !fused {
		if err := mountTmpfsMasks(file, dir); err != nil {
			return 0, err
		}
	}
	// Masks in one directory share its descriptor (opened without links
	// once): a glob's thousands of matches usually sit in a few.
	parent, parentFD := "", -1
	defer func() {
		if parentFD >= 0 {
			unix.Close(parentFD)
		}
	}()
	for i, m := range masks {
		src := file
		if m.Dir {
			src = dir
		}
		if fused {
			src = maskStaging + "/" + maskNodeName(i)
		}
		if d := filepath.Dir(m.Path); d != parent {
			if parentFD >= 0 {
				unix.Close(parentFD)
			}
			if parentFD, err = openNoLinks(d); err != nil {
				return observer, fmt.Errorf("cannot mask %s: %v (was a directory above it moved or replaced by a link during the launch?)", m.Path, err)
			}
			parent = d
		}
		if err := maskOne(parentFD, src, m); err != nil {
			return observer, err
		}
	}
	if err := unix.Unmount(maskStaging, unix.MNT_DETACH); err != nil {
		return observer, fmt.Errorf("cannot detach the masks' staging tmpfs: %v", err)
	}
	return observer, nil
}

// mountTmpfsMasks makes the two sources of the masks without an observer:
// an empty file and an empty directory, mode 0000, on a read-only tmpfs.
func mountTmpfsMasks(file, dir string) error {
	if err := unix.Mount("tmpfs", maskStaging, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700"); err != nil {
		return fmt.Errorf("cannot mount the masks' tmpfs on %s: %v", maskStaging, err)
	}
	f, err := unix.Open(file, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("creating the file mask: %v", err)
	}
	unix.Close(f)
	if err := unix.Mkdir(dir, 0); err != nil {
		return fmt.Errorf("creating the directory mask: %v", err)
	}
	// Read-only before any bind: every bind of it is read-only from the
	// start.
	if err := unix.Mount("", maskStaging, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("making the masks read-only: %v", err)
	}
	return nil
}

// openNoLinks opens path as an O_PATH descriptor, one component at a
// time, refusing a symbolic link anywhere on the way (what openat2's
// RESOLVE_NO_SYMLINKS does; the base filter refuses openat2 itself).
func openNoLinks(path string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if path == "/" {
		return fd, nil
	}
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" || name == "." || name == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%q is not a clean path", path)
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, fmt.Errorf("%s is a symbolic link", name)
		}
		fd = next
	}
	return fd, nil
}

// moveStaged moves each staged layer onto its path, parents first,
// entirely through descriptors: the staged mount (bwrap bound it on this
// sandbox's own /dev) and its destination are each opened with no link on
// the way and checked to be the file or directory found at launch, and
// move_mount takes one to the other. No path is resolved twice, and nothing
// is ever created outside /dev. Then the staging mount points go.
func moveStaged(binds []Bind) error {
	for _, b := range binds {
		if err := moveOne(b); err != nil {
			return fmt.Errorf("cannot mount %s: %v", b.Path, err)
		}
	}
	for i := len(binds) - 1; i >= 0; i-- {
		err := unix.Unlink(binds[i].Stage)
		if err == unix.EISDIR {
			err = unix.Rmdir(binds[i].Stage)
		}
		if err != nil {
			return fmt.Errorf("cannot remove the staging point %s: %v", binds[i].Stage, err)
		}
	}
	if len(binds) > 0 {
		if err := unix.Rmdir(filepath.Dir(binds[0].Stage)); err != nil {
			return fmt.Errorf("cannot remove %s: %v", filepath.Dir(binds[0].Stage), err)
		}
	}
	return nil
}

func moveOne(b Bind) error {
	same := func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Dev != b.Dev || st.Ino != b.Ino {
			return errors.New("it is not what was found at launch (it was replaced meanwhile); refusing")
		}
		return nil
	}
	src, err := openNoLinks(b.Stage)
	if err != nil {
		return fmt.Errorf("staged mount: %v", err)
	}
	defer unix.Close(src)
	if err := same(src); err != nil {
		return fmt.Errorf("what bwrap bound: %v", err)
	}
	dst, err := openNoLinks(b.Path)
	if err != nil {
		return fmt.Errorf("%v (was it or a directory above it replaced during the launch?)", err)
	}
	defer unix.Close(dst)
	if err := same(dst); err != nil {
		return err
	}
	if err := unix.MoveMount(src, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %v", err)
	}
	return nil
}

func maskOne(parentFD int, src string, m policy.Mask) error {
	fd, err := unix.Openat(parentFD, filepath.Base(m.Path), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot mask %s: %v (was it moved or replaced by a link during the launch?)", m.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("cannot mask %s: %v", m.Path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if st.Dev != m.Dev || st.Ino != m.Ino || isDir != m.Dir {
		return fmt.Errorf("cannot mask %s: it is not the file found at launch (it was replaced meanwhile); refusing", m.Path)
	}
	target := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("cannot mask %s: %v", m.Path, err)
	}
	return nil
}

// dropCapabilities removes every capability from the calling thread for
// good (bounding set, ambient set, securebits so that root regains none on
// exec, then the permitted set) and sets no_new_privs. The caller execs from
// this thread right after.
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %v", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %v", err)
	}
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 // NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return fmt.Errorf("setting securebits: %v", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %v", err)
	}
	return nil
}

// DropAllCapabilities drops every capability the calling thread holds (as
// root: all of them) and sets no_new_privs; with none held there is nothing
// to drop.
func DropAllCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %v", err)
	}
	if data[0].Permitted|data[1].Permitted|data[0].Effective|data[1].Effective|data[0].Inheritable|data[1].Inheritable == 0 {
		return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	return dropCapabilities()
}

// verifyThread reads the calling thread's confinement back from the kernel:
// no_new_privs, seccomp in filter mode with at least filters filters, the
// filter refusing TIOCSTI (so it is the one grok-sandbox built), and every
// capability set empty. The command is forked or exec'd from this thread.
//
// An ordinary user outside any user namespace (the Landlock backend) keeps
// the full bounding set, which only root can drop; with no_new_privs and no
// permitted capability it grants nothing, so it is checked only inside the
// sandbox (bwrap drops it) and for root.
func verifyThread(filters int) error {
	return VerifyThread(filters, true)
}

// VerifyThread is verifyThread with the bounding set checked only when
// bounding is set.
func VerifyThread(filters int, bounding bool) error {
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return fmt.Errorf("cannot read /proc/thread-self/status to check the sandbox: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	if got["NoNewPrivs"] != "1" {
		return errors.New("no_new_privs is not set")
	}
	if got["Seccomp"] != "2" {
		return fmt.Errorf("no seccomp filter is in force (Seccomp: %s)", got["Seccomp"])
	}
	if v, ok := got["Seccomp_filters"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < filters {
			return fmt.Errorf("%s seccomp filters are in force, want %d", v, filters)
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if k == "CapBnd" && !bounding {
			continue
		}
		v, ok := got[k]
		if !ok || strings.Trim(v, "0") != "" {
			return fmt.Errorf("capabilities are left (%s: %s)", k, v)
		}
	}
	// Without the filter, TIOCSTI on /dev/null fails with ENOTTY.
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open /dev/null: %v", err)
	}
	defer unix.Close(null)
	var c byte
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(null), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	if errno != unix.EPERM {
		return fmt.Errorf("the seccomp filter does not refuse TIOCSTI (%v)", errno)
	}
	return nil
}

// verifyPaths checks that every masked path is unreadable and read-only and
// every protected path read-only, as the kernel sees them now.
// verifyIdentity checks, before any mask covers them, that the grants,
// pins and protected paths bwrap mounted are on the files the launcher
// found.
func verifyIdentity(c LayerCheck) error {
	for _, id := range c.Identity {
		fd, err := openNoLinks(id.Path)
		if err != nil {
			return fmt.Errorf("granted path %s: %v (was it replaced during the launch?)", id.Path, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil || st.Dev != id.Dev || st.Ino != id.Ino {
			return fmt.Errorf("granted path %s is not what it was at launch (it was replaced meanwhile)", id.Path)
		}
	}
	return nil
}

func verifyPaths(c LayerCheck) error {
	for _, path := range c.ReadOnly {
		if err := readOnlyMount(path); err != nil {
			return err
		}
	}
	// The attributes the kernel has (AT_STATX_DONT_SYNC): a mask of the
	// mask observer's is not asked again, once per mask, what it answered
	// at its mount. Every mask of one file system shares its superblock,
	// read-only as a whole: one statfs per device says so for all of them.
	readOnlyDev := map[uint64]bool{}
	for _, path := range c.Masked {
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_MODE, &st); err != nil {
			return fmt.Errorf("masked path %s: %v", path, err)
		}
		if st.Mode&0o7777 != 0 {
			return fmt.Errorf("masked path %s is not masked (mode %#o)", path, st.Mode&0o7777)
		}
		dev := unix.Mkdev(st.Dev_major, st.Dev_minor)
		if readOnlyDev[dev] {
			continue
		}
		if err := readOnlyMount(path); err != nil {
			return err
		}
		readOnlyDev[dev] = true
	}
	return nil
}

func readOnlyMount(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("read-only path %s: %v", path, err)
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		return fmt.Errorf("%s is writable, but must be read-only", path)
	}
	return nil
}

// allowNetwork is who keeps the network under the notifying rule: the
// command's own threads, and, when agent names the real agent's program,
// the one process that the command itself started to execute it.
//
// That process is chosen at its first network call: a process whose parent
// is the command and whose executable is agent's very file (device and
// inode, read from /proc/PID/exe, which the process cannot fake). Once
// chosen, only it is allowed, while it lives and still executes that file;
// a later process running the same program (a child of the agent, or a
// second one the launcher starts) never is, and none is once the command
// itself executes the program (it exec'd into the agent: its children are
// the agent's tools). It is held by a pidfd, so a
// recycled pid is never taken for it.
func allowNetwork(command int, agent *PathID) func(tid int) bool {
	own := seccomp.AllowThreadGroup(command)
	if agent == nil {
		return own
	}
	chosen, pidfd, gone := 0, -1, false
	isAgent := func(pid int) bool {
		var st unix.Stat_t
		return unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) == nil && st.Dev == agent.Dev && st.Ino == agent.Ino
	}
	alive := func() bool {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return err == nil && n == 0
	}
	return func(tid int) bool {
		if own(tid) {
			return true
		}
		tgid, err := seccomp.Tgid(tid)
		if err != nil || gone {
			return false
		}
		if chosen == 0 {
			// A launcher that became the program itself (exec, as
			// Codex's does on newer Node) is the agent: every process it
			// starts is a tool, whatever it runs.
			if isAgent(command) {
				return false
			}
			if ppid, err := parentOf(tgid); err != nil || ppid != command || !isAgent(tgid) {
				return false
			}
			fd, err := unix.PidfdOpen(tgid, 0)
			if err != nil {
				return false
			}
			// Still the same process: the pidfd was opened for the pid
			// read above, and it is still the command's child running
			// the agent's file.
			if ppid, err := parentOf(tgid); err != nil || ppid != command || !isAgent(tgid) {
				unix.Close(fd)
				return false
			}
			chosen, pidfd = tgid, fd
		}
		if tgid != chosen {
			return false
		}
		// Read after tgid: if the chosen process is still alive now, the
		// pid read above was its own (a pid is not reused while its
		// process lives).
		if !alive() {
			gone = true
			unix.Close(pidfd)
			return false
		}
		return isAgent(tgid)
	}
}

// parentOf is the parent pid of process pid, from /proc/PID/status.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no PPid")
}

// Supervise starts the command as a child, from a locked thread that
// first runs restrict (Landlock, for that backend), installs base (when not
// nil: the Landlock backend has no bwrap to install it) and, under
// restrict_network, a filter whose network syscalls notify this process. It
// checks that thread's layers, answers the notifications (allowed for the
// command's own threads, EACCES for every other process) until the command
// exits, reaps every other child meanwhile when reaper is set (pid 1), and
// returns the command's status (128+N for a signal, as shells do).
func Supervise(cfg *Config, backend string, events int, restrict func() error, filters int, env []string, reaper bool) int {
	arch, err := seccomp.HostArch()
	if err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
		return ExitRefused
	}
	var notify []bpf.RawInstruction
	var cnet *childNet
	var observe seccomp.Observe
	if o := cfg.Observe; o != nil && o.Paths {
		// Writes too, masks or not: a write to a mask is refused at its
		// read-only mount (EROFS) before its node is asked.
		observe = seccomp.Observe{Paths: true, Writes: true}
	}
	// A command that runs as you in a namespace of its own (cfg.User)
	// gets its filter from its starter, with the refusal of any further
	// user namespace in it.
	blockUserNS := cfg.User != nil && cfg.User.BlockUserNamespaces
	var plain []bpf.RawInstruction // a filter that notifies nothing
	if cfg.Network == seccomp.NetworkNotify || observe.Paths {
		network := seccomp.NetworkUnfiltered // the base filter has the rest
		if cfg.Network == seccomp.NetworkNotify {
			network = seccomp.NetworkNotify
		}
		if notify, err = seccomp.Build(seccomp.Rules{Network: network, Observe: observe, BlockUserNamespaces: blockUserNS}, arch); err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
			return ExitRefused
		}
		if cfg.ChildNet && cfg.Network == seccomp.NetworkNotify {
			// No helper on its descriptor: startNetHelper has warned.
			if _, err := unix.FcntlInt(uintptr(FDNetHelper), unix.F_GETFD, 0); err == nil {
				if cnet, err = openChildNet(arch); err != nil {
					fmt.Fprintf(os.Stderr, "grok-sandbox: warning: cannot give the processes the wrapped command starts a private loopback (%v); they get no network at all\n", err)
				}
			}
		}
	}
	if notify == nil && blockUserNS {
		if plain, err = seccomp.Build(seccomp.Rules{BlockUserNamespaces: true}, arch); err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", err)
			return ExitRefused
		}
	}
	// Signals a user sends to the sandbox reach this process; pass the
	// ones that ask the command to stop on. Ctrl-C and Ctrl-\ come from
	// the terminal to the whole foreground group, the command included, so
	// they are caught (not ignored: an ignored signal would stay ignored
	// in the command) and dropped here.
	//
	// Every other signal that would stop or crash this process is caught
	// too: any process in the sandbox can signal pid 1, and the Go runtime
	// turns a SIGSEGV or SIGABRT sent with kill into a crash (with a
	// traceback to the terminal) unless it is caught.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, caughtSignals...)

	var v *violations
	if notify != nil || cfg.Observe != nil {
		v = newViolations(cfg.Profile, backend, events, arch)
	}
	var watch *pathWatch
	if o := cfg.Observe; o != nil && o.Paths {
		watch = newPathWatch(arch, cfg.Masks, o.Protected)
	}
	if cnet != nil && v != nil {
		v.addrOf = cnet.addressOf
	}
	if cnet != nil && len(cfg.AllowHosts) > 0 {
		px, err := startProxy(cnet, cfg.AllowHosts, v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: warning: allow_hosts: cannot start the proxy (%v); the processes the wrapped command starts reach no host\n", err)
		} else {
			env = px.Env(env)
		}
	}
	type started struct {
		proc     *os.Process
		listener int
		err      error
		refused  bool // the sandbox could not be set up (not the command's fault)
		// starterRefused: the starter refused to start the command, and
		// said why; it exits 125.
		starterRefused bool
	}
	ch := make(chan started, 1)
	go func() {
		// The command's filter goes on this thread only, and the command
		// is forked from it, so the command and its descendants carry it
		// while the supervisor's other threads do not. The goroutine ends
		// locked, so the filtered thread ends with it.
		runtime.LockOSThread()
		if pid, ok := heldStarter(); ok && cfg.User != nil {
			spec := starterSpec{Path: cfg.Path, Args: cfg.Args, Env: env, Dir: cfg.Dir, UID: cfg.User.UID, GID: cfg.User.GID, Filters: filters}
			switch {
			case notify != nil:
				spec.Filter, spec.Listener, spec.Filters = notify, true, filters+1
			case plain != nil:
				spec.Filter, spec.Filters = plain, filters+1
			}
			proc, listener, err := releaseStarter(pid, spec)
			// A starter that refused has said why; its status (125) is
			// the run's.
			ch <- started{proc: proc, listener: listener, err: err, starterRefused: err != nil && proc != nil, refused: err != nil && proc == nil}
			return
		}
		if restrict != nil {
			if err := restrict(); err != nil {
				ch <- started{err: err, refused: true}
				return
			}
		}
		listener, want := -1, filters
		if notify != nil {
			var err error
			if listener, err = seccomp.InstallWithListener(notify); err != nil {
				ch <- started{err: err, refused: true}
				return
			}
			want++
		}
		if err := VerifyThread(want, reaper || os.Geteuid() == 0); err != nil {
			ch <- started{err: fmt.Errorf("%v; refusing to start the command", err), refused: true}
			return
		}
		cmd := &exec.Cmd{Path: cfg.Path, Args: cfg.Args, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
		err := cmd.Start()
		ch <- started{proc: cmd.Process, listener: listener, err: err}
	}()
	st := <-ch
	if st.starterRefused {
		_, _ = st.proc.Wait()
		return ExitRefused
	}
	if st.refused {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %v\n", st.err)
		return ExitRefused
	}
	if st.err != nil {
		return NotFound(cfg.Args[0], st.err)
	}
	pid := st.proc.Pid
	stop := make(chan struct{})
	done := make(chan error, 1)
	// The notifying filter is answered until this process exits, not only
	// while the command runs: a process the command left behind would get
	// ENOSYS from every notified syscall otherwise. Once the command is
	// gone nobody keeps the network (its pid may be recycled after the
	// reap), and file syscalls go on as before.
	var gone atomic.Bool
	forever := make(chan struct{})
	if st.listener >= 0 {
		go func() {
			var child func(seccomp.Notification, seccomp.Reply) bool
			if cnet != nil {
				child = func(n seccomp.Notification, r seccomp.Reply) bool { return cnet.handle(n, r, v) }
			}
			if watch != nil {
				watch.own = seccomp.AllowThreadGroup(pid)
			}
			commandAllow := allowNetwork(pid, cfg.Agent)
			allow := func(tid int) bool { return !gone.Load() && commandAllow(tid) }
			if cfg.Isolated {
				allow = func(int) bool { return false }
			}
			var observe func(seccomp.Notification, seccomp.Reply) bool
			if watch != nil {
				observe = func(n seccomp.Notification, r seccomp.Reply) bool { return watch.seen(v, n, r) }
			}
			// Should the loop end on an error, the listener is closed: every
			// pending and later notified call then fails (ENOSYS) instead of
			// waiting for an answer that never comes.
			var err error
			if cfg.Network != seccomp.NetworkNotify {
				// Only the file observer's syscalls notify.
				err = seccomp.ObserveUntil(st.listener, forever, func(n seccomp.Notification, r seccomp.Reply) {
					if !watch.seen(v, n, r) {
						_ = r.Continue()
					}
				})
			} else {
				err = seccomp.SuperviseChildren(st.listener, forever, allow, child, v.record, observe)
			}
			if err != nil {
				unix.Close(st.listener)
				v.notice(fmt.Sprintf("the supervisor stopped (%v): notified calls of the command and its children fail from now on", err))
			}
			done <- err
		}()
	} else {
		done <- nil
	}
	var reports *maskReports
	if cfg.Observe != nil && cfg.Observe.Fuse {
		if _, err := unix.FcntlInt(uintptr(FDObserver), unix.F_GETFD, 0); err == nil {
			reports = watchMaskObserver(FDObserver, v, stop)
			if obs, err := strconv.Atoi(os.Getenv(observerPidEnv)); err == nil && obs > 1 {
				go killIfStopped(obs)
			}
		}
	}
	go func() {
		for sig := range sigs {
			switch sig {
			case unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2:
				_ = st.proc.Signal(sig)
			}
		}
	}()
	// Wait for the command to exit without reaping it: while it is a
	// zombie its pid cannot be recycled, so nothing else can pass for it.
	// Orphans that pid 1 inherits are reaped meanwhile. Stop answering,
	// then reap the command.
	waitCommand(pid, reaper)
	gone.Store(true)
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: supervisor: %v\n", err)
		}
	default:
	}
	if reports != nil {
		reports.wait()
	}
	if v != nil {
		v.flush()
		v.sayRefusedNetwork(cfg.Isolated)
	}
	ps, err := st.proc.Wait()
	if err != nil {
		fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", cfg.Args[0], err)
		return ExitRefused
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// caughtSignals are every signal that would stop or crash the init stage or
// a helper of its (see Supervise): any process in the sandbox can send them.
var caughtSignals = []os.Signal{unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGABRT, unix.SIGTRAP, unix.SIGSYS,
	unix.SIGPIPE, unix.SIGALRM, unix.SIGVTALRM, unix.SIGPROF, unix.SIGXCPU, unix.SIGXFSZ,
	unix.SIGSTKFLT, unix.SIGPWR, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}

// shrugSignals makes a helper survive every signal a process in the
// sandbox can send it but SIGKILL and SIGSTOP (a stopped or killed helper
// fails closed; see `grok-sandbox help violations` and `help network`): they are
// caught and dropped. The Go runtime would otherwise crash on a SIGSEGV
// sent with kill, and end on SIGTERM or SIGPIPE.
func shrugSignals() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, caughtSignals...)
	go func() {
		for range c {
		}
	}()
}

// waitCommand returns once pid has exited, leaving it unreaped. With reaper
// set it reaps every other child that exits meanwhile.
func waitCommand(pid int, reaper bool) {
	for {
		var info unix.Siginfo
		which, id := unix.P_PID, pid
		if reaper {
			which, id = unix.P_ALL, 0
		}
		err := unix.Waitid(which, id, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		got := siginfoPid(&info)
		if got == pid || !reaper {
			return
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(got, &ws, unix.WNOHANG, nil)
	}
}

// siginfoPid is si_pid of a SIGCHLD siginfo: the first field of the union,
// after si_signo, si_errno, si_code and padding (16 bytes on 64-bit).
func siginfoPid(info *unix.Siginfo) int {
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), 16)))
}

func NotFound(name string, err error) int {
	fmt.Fprintf(os.Stderr, "grok-sandbox: %s: %v\n", name, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return ExitNotFound
	}
	return ExitNotExecutable
}

// violations logs blocked attempts to the event log, rate-limited so that a
// loop cannot flood it: at most one line per process name, syscall and
// message (which names the destination) a second, and at most
// maxViolations lines per run. The supervisor never
// waits for the log: lines go to a queue that a writer drains, and a full
// queue drops them. A connect to a Unix socket path that does not exist in
// the sandbox is refused without a line (see connectToMissingPath).
type violations struct {
	profile string
	backend string
	arch    seccomp.Arch
	mu      sync.Mutex
	last    map[string]time.Time
	logged  int
	// dropped counts the lines the rate limit or the cap left out; flush
	// logs one summary line when any were.
	dropped int
	// addrOf reads the address a network call names (nil: nobody can).
	addrOf func(seccomp.Notification) (address, family string)
	// netRefused counts the refused network attempts, netFirst says what
	// the first was (see sayRefusedNetwork).
	netRefused int
	netFirst   string
	closed     bool // flushed: later violations are not logged
	queue      chan eventlog.Event
	written    chan struct{}
}

const maxViolations = 100

// newViolations starts the writer for events, the event log's descriptor
// opened before the sandbox started (-1: there is none, nothing is logged).
func newViolations(profile, backend string, events int, arch seccomp.Arch) *violations {
	v := &violations{profile: profile, backend: backend, arch: arch, last: map[string]time.Time{},
		queue: make(chan eventlog.Event, 256), written: make(chan struct{})}
	go func() {
		defer close(v.written)
		// Anything in the sandbox can hold the log's lock (the log is
		// readable there): once a line could not get it in time, the rest
		// are written without waiting for it, and a line says so.
		//
		// A write that fails for another reason (a full disk, a file size
		// limit) is said once: a degraded line if one can still be
		// written, else a line on the command's stderr; the run goes on,
		// and later lines are tried all the same.
		held, failed := false, false
		for ev := range v.queue {
			if events < 0 {
				continue
			}
			var err error
			if held {
				err = eventlog.AppendFDUnlocked(events, ev)
			} else if err = eventlog.AppendFD(events, ev); errors.Is(err, eventlog.ErrLocked) {
				held = true
				_ = eventlog.AppendFDUnlocked(events, eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: profile, Backend: backend,
					Message: "the event log was kept locked by a process in the sandbox: this run's lines are written without the lock"})
				err = eventlog.AppendFDUnlocked(events, ev)
			}
			if err != nil && !failed {
				failed = true
				msg := fmt.Sprintf("the event log could not be written (%v): lines of this run may be missing", err)
				if eventlog.AppendFDUnlocked(events, eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: profile, Backend: backend, Message: msg}) != nil {
					fmt.Fprintf(os.Stderr, "grok-sandbox: warning: %s\n", msg)
				}
			}
		}
	}()
	return v
}

// flush logs the summary line (when the rate limit or the cap left lines
// out) and waits, a bounded time, for the queued lines to be written.
func (v *violations) flush() {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	if v.dropped > 0 {
		ev := eventlog.Event{Time: eventlog.Now(), Event: "violation_summary", Profile: v.profile, Backend: v.backend,
			Message: fmt.Sprintf("%d more violations were not logged (at most one a second per program, path and operation, and %d a run); %d %s logged", v.dropped, maxViolations, v.logged, map[bool]string{true: "was", false: "were"}[v.logged == 1])}
		select {
		case v.queue <- ev:
		default:
		}
	}
	close(v.queue)
	v.mu.Unlock()
	// The writer waits for the log's lock once, at most LockWait, and
	// writes without it from then on: every queued line is written soon.
	select {
	case <-v.written:
	case <-time.After(reportsDrain):
	}
}

func (v *violations) record(n seccomp.Notification) {
	name := seccomp.SyscallName(v.arch, n.Nr)
	if name == "connect" && connectToMissingPath(n.Pid, n.Args[1], n.Args[2]) {
		return // refused all the same; nothing was there to reach
	}
	what := name
	if name == "socket" || name == "socketpair" {
		what = fmt.Sprintf("%s(family %d, type %d)", name, n.Args[0], n.Args[1]&0xf)
	}
	v.recordMsg(n, fmt.Sprintf("blocked %s: processes started by the wrapped command have no network", what))
}

// recordMsg logs msg about n's caller, rate-limited like record.
func (v *violations) recordMsg(n seccomp.Notification, msg string) {
	name := seccomp.SyscallName(v.arch, n.Nr)
	comm := "?"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.Pid)); err == nil {
		comm = strings.TrimSpace(string(b))
	}
	v.countNetwork(comm, msg)
	ev := eventlog.Event{Command: comm, Exe: exeOf(fmt.Sprintf("/proc/%d", n.Pid)), Message: msg, Op: name}
	if v.addrOf != nil {
		ev.Address, ev.Family = v.addrOf(n)
	}
	if ev.Family == "" && (name == "socket" || name == "socketpair") {
		ev.Family = familyName(int(int32(n.Args[0])))
	}
	// Per destination too: one line a second for each thing tried.
	v.queueEvent(comm+"/"+name+"/"+msg, ev)
}

// countNetwork counts a refused network attempt of program comm, for the
// one line the run ends with (sayRefusedNetwork).
func (v *violations) countNetwork(comm, msg string) {
	// Not a connect that found nothing listening on the children's own
	// loopback: that is what a closed port always answers.
	if !strings.HasPrefix(msg, "blocked ") && !strings.Contains(msg, "not in allow_hosts") {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.netRefused == 0 {
		v.netFirst = fmt.Sprintf("%s (%s)", msg, comm)
	}
	v.netRefused++
}

// sayRefusedNetwork tells, on the command's stderr, once at the end of a
// run, that network attempts of the command's children were refused: a
// tool that retries (npm's EAI_AGAIN for a minute) otherwise reads as a
// network outage, and the cause is only in the event log.
func (v *violations) sayRefusedNetwork(isolated bool) {
	v.mu.Lock()
	n, first := v.netRefused, v.netFirst
	v.mu.Unlock()
	if n == 0 {
		return
	}
	who, fix := "processes the wrapped command started", "list the hosts they need in allow_hosts of a custom profile (see `grok-sandbox help network`)"
	if isolated {
		who, fix = "processes in the sandbox", "run without --isolate-network"
	}
	attempts := "attempts were"
	if n == 1 {
		attempts = "attempt was"
	}
	fmt.Fprintf(os.Stderr, "grok-sandbox: %d network %s refused to %s (the first: %s); to allow them, %s; every refusal is in the event log\n",
		n, attempts, who, printableMsg(first), fix)
}

// printableMsg is msg cut to one short line for the terminal.
func printableMsg(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, msg)
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return msg
}

// queueEvent queues ev (a violation) unless the rate limit or the cap says
// otherwise.
func (v *violations) queueEvent(key string, ev eventlog.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	now := time.Now()
	if v.logged >= maxViolations || now.Sub(v.last[key]) < time.Second {
		v.dropped++
		return
	}
	v.last[key] = now
	v.logged++
	ev.Time, ev.Event, ev.Profile, ev.Backend = eventlog.Now(), "violation", v.profile, v.backend
	select {
	case v.queue <- ev:
	default:
		v.dropped++
	}
}

// logFile queues a touch of a denied or protected path: one line a second
// per program, path and operation.
func (v *violations) logFile(fv fileViolation) {
	what := "denied path"
	if fv.Protected {
		what = "protected path"
	}
	msg := fmt.Sprintf("blocked %s of %s %s (%s)", fv.Op, what, fv.Path, fv.Entry)
	v.queueEvent(fv.Comm+"/"+fv.Op+"/"+fv.Path, eventlog.Event{Command: fv.Comm, Exe: fv.Exe, Message: msg,
		Op: fv.Op, Path: fv.Path, Entry: fv.Entry, Source: fv.Source})
}

// lost counts n violations that never reached the log.
func (v *violations) lost(n int) {
	if n > 0 {
		v.mu.Lock()
		v.dropped += n
		v.mu.Unlock()
	}
}

// notice logs one line about the observation itself (not rate-limited,
// not counted).
func (v *violations) notice(msg string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	ev := eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: v.profile, Backend: v.backend, Message: msg}
	select {
	case v.queue <- ev:
	default:
	}
}

// CloseFrom marks every descriptor from first up close-on-exec.
func CloseFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: walk the open descriptors.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return err
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
