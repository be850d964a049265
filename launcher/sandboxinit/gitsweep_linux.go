package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/printable"
)

// launched is when this process started: the launch, near enough.
var launched = time.Now()

// Limits of one sweep of a git directory.
const (
	maxSweepEntries = 200000
	maxSweepDepth   = 32
)

// endGitLinks runs once the command has exited: it ends every process left
// in the sandbox (pid 1 is the reaper, so they are its children), waits for
// them, then removes every symbolic link made since the launch in the git
// directories the sandbox could write (loose objects' directories too: a
// link parked there in one run, then moved, keeps its time). git never
// makes one there, and git
// outside the sandbox follows one where it writes (logs/HEAD is appended
// to, COMMIT_EDITMSG rewritten): a link planted there would have the
// user's next commit write, outside any sandbox, wherever it points. Each
// removal is said on stderr and logged.
func endGitLinks(dirs []string, since time.Time, events int, profile string) {
	if len(dirs) == 0 {
		return
	}
	_ = unix.Kill(-1, unix.SIGKILL)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			break
		}
		if pid <= 0 {
			time.Sleep(time.Millisecond)
		}
	}
	var removed []string
	unchecked := func(dir, why string) {
		fmt.Fprintf(os.Stderr, "grok-sandbox: warning: %s could not be checked whole (%s): symbolic links made in it during the run may remain (git outside would write through them); check with `find %s -type l`\n",
			printable.String(dir), why, printable.String(dir))
	}
	for _, dir := range dirs {
		fd, err := openNoLinks(dir)
		if errors.Is(err, unix.ENOENT) {
			continue // gone: nothing of it for git to write through
		}
		var d int
		if err == nil {
			d, err = openSweep(fd)
			unix.Close(fd)
		}
		if err != nil {
			unchecked(dir, err.Error())
			continue
		}
		n := 0
		if !sweepLinks(d, dir, since, 0, &n, &removed) {
			unchecked(dir, fmt.Sprintf("more than %d entries, or deeper than %d", maxSweepEntries, maxSweepDepth))
		}
	}
	if len(removed) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "grok-sandbox: warning: removed %d symbolic link(s) made in the repository's git directory during the run (git outside would write through them): %s\n",
		len(removed), printable.String(strings.Join(removed, ", ")))
	if events >= 0 {
		for _, p := range removed {
			ev := eventlog.New("violation", "a symbolic link made in a git directory during the run was removed: git outside the sandbox would write where it points")
			ev.Profile, ev.Backend, ev.Op, ev.Path = profile, "bwrap", "symlink", p
			_ = eventlog.AppendFD(events, ev)
		}
	}
}

// sweepLinks removes the links made since since in directory d (path is
// its name, for the report; d is closed), and goes into every
// subdirectory, loose objects' too, each opened without following a link
// (openSweep). It returns false when it could not see or clear all of it:
// a bound, an entry it could not read, a link it could not remove.
func sweepLinks(d int, path string, since time.Time, depth int, n *int, removed *[]string) bool {
	f := os.NewFile(uintptr(d), path)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return false
	}
	whole := true
	for _, e := range ents {
		if *n++; *n > maxSweepEntries {
			return false
		}
		name := e.Name()
		var st unix.Stat_t
		if err := unix.Fstatat(d, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err != unix.ENOENT {
				whole = false
			}
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if time.Unix(st.Ctim.Unix()).Before(since) {
				continue
			}
			if err := unix.Unlinkat(d, name, 0); err == nil {
				*removed = append(*removed, path+"/"+name)
			} else if err != unix.ENOENT {
				whole = false
			}
		case unix.S_IFDIR:
			if depth+1 > maxSweepDepth {
				whole = false
				continue
			}
			p, err := unix.Openat(d, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				whole = false
				continue
			}
			sub, err := openSweep(p)
			unix.Close(p)
			if err != nil {
				whole = false
				continue
			}
			if !sweepLinks(sub, path+"/"+name, since, depth+1, n, removed) {
				whole = false
			}
		}
	}
	return whole
}

// openSweep opens for reading the directory p (an O_PATH descriptor)
// names. A directory its owner cannot read, enter or write (a sandbox's
// chmod, to hide a link from this process, which runs as that owner with
// no capability) first gets u+rwx back, which git needs there anyway:
// through /proc/self/fd, so the mode lands on that very directory.
func openSweep(p int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(p, &st); err != nil {
		return -1, err
	}
	if st.Mode&0o700 != 0o700 {
		if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(p), (st.Mode&0o7777)|0o700); err != nil {
			return -1, err
		}
	}
	return unix.Openat(p, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}
