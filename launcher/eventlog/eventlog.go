// Package eventlog writes GROK_HOME/sandbox-events.jsonl: one JSON object a
// line, mode 0600, bounded in size, safe under concurrent launches. Opening
// it never blocks and never follows a link, and its lock is waited for a
// bounded time, so nothing a sandbox plants at its path (a FIFO, a link, a
// held lock) can hang a launch or send a line elsewhere.
package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Event is one line of GROK_HOME/sandbox-events.jsonl.
type Event struct {
	// SchemaVersion is filled in when the line is written.
	SchemaVersion int    `json:"schema_version"`
	Time          string `json:"time"`
	Event         string `json:"event"` // applied, disabled, refused, degraded, violation
	Profile       string `json:"profile,omitempty"`
	Source        string `json:"source,omitempty"`
	Backend       string `json:"backend,omitempty"`
	Workspace     string `json:"workspace,omitempty"`
	// Command is the program's name: for a violation, the process name
	// the caller gave itself (any process can set its own); Exe is what it
	// runs as the kernel names it (/proc/PID/exe), which only an exec
	// changes.
	Command string `json:"command,omitempty"`
	Exe     string `json:"exe,omitempty"`
	Message string `json:"message,omitempty"`
	// For a violation on a path: the operation tried (open, stat, list,
	// exec, rename, link, truncate, remove, write, create), the path
	// touched, and the entry that denies or protects it as written
	// (Source then says where: FILE:LINE).
	Op    string `json:"op,omitempty"`
	Path  string `json:"path,omitempty"`
	Entry string `json:"entry,omitempty"`
	// For a violation on the network: the operation is the syscall (or
	// the proxy's method), Address what it was for (host:port, [v6]:port,
	// unix:PATH, unix:@ABSTRACT) and Family its address family (inet,
	// inet6, unix; empty when unknown).
	Address string `json:"address,omitempty"`
	Family  string `json:"family,omitempty"`
	// Requirements is the administrator's requirements file that applied
	// to the run (applied lines only).
	Requirements string `json:"requirements,omitempty"`
}

const (
	Name = "sandbox-events.jsonl"
	// Max bounds the log: past it, its contents move to
	// sandbox-events.jsonl.1 (replacing the previous ones), so at most about
	// twice this much is kept.
	Max = 1 << 20
)

// Open opens (creating, mode 0600) the event log for appending. It
// never blocks and never follows a link: a FIFO, a device, a directory or a
// symlink planted at the path, or a file with another owner or a second
// name (a hard link to something else), is an error, not a hang or a write
// elsewhere.
func Open(grokHome string) (*os.File, error) {
	path := filepath.Join(grokHome, Name)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %v", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := checkOwnFile(fd, path); err != nil {
		f.Close()
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode&0o777 != 0o600 {
		_ = unix.Fchmod(fd, 0o600)
	}
	return f, nil
}

// Append adds ev to the event log in GROK_HOME. The file is created
// with mode 0600 and written with one O_APPEND write per line under an
// exclusive lock, so that concurrent launches never interleave or lose a
// line, and rotation never races an append.
//
// Rotation happens in place: the log's contents are copied into the
// rotation file and the log truncated, both keeping their inodes. Running
// sandboxes have those very inodes bound read-only at the two paths; a
// rename would leave them a new, writable file at the log's path.
func Append(grokHome string, ev Event) error {
	line, err := eventLine(ev)
	if err != nil {
		return err
	}
	f, err := Open(grokHome)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockBounded(int(f.Fd())); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size()+int64(len(line)) > Max && fi.Size() > 0 {
		if err := rotate(f, filepath.Join(grokHome, Name+".1")); err != nil {
			return err
		}
	}
	_, err = f.Write(line)
	return err
}

// rotate copies the log (locked by the caller) into the rotation file,
// opened like the log (no link, no FIFO, regular, ours, one name), and
// empties the log.
func rotate(log *os.File, rotated string) error {
	fd, err := unix.Open(rotated, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open %s: %v", rotated, err)
	}
	r := os.NewFile(uintptr(fd), rotated)
	defer r.Close()
	if err := checkOwnFile(fd, rotated); err != nil {
		return err
	}
	if err := r.Truncate(0); err != nil {
		return err
	}
	// The log is open for appending only; read it through its descriptor
	// (the very inode, whatever its path now holds).
	src, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", log.Fd()))
	if err != nil {
		return fmt.Errorf("rotating the event log: %v", err)
	}
	defer src.Close()
	if _, err := io.Copy(r, src); err != nil {
		return fmt.Errorf("rotating the event log: %v", err)
	}
	return log.Truncate(0)
}

// LockWait bounds how long a launch or the supervisor waits for the event
// log's lock. Anyone who can read the log can hold its lock (a read-only
// descriptor is enough for flock): waiting forever would let a sandboxed
// process hang every later launch, or the supervisor and with it the
// command.
const LockWait = 500 * time.Millisecond

// ErrLocked is the error of a write that could not get the log's lock in
// LockWait.
var ErrLocked = errors.New("the event log is locked by another process")

func lockBounded(fd int) error {
	deadline := time.Now().Add(LockWait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (for over %v); event not written", ErrLocked, LockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkOwnFile refuses anything at path but a regular file of ours with one
// name: a FIFO, a device, a directory, another user's file, a hard link.
func checkOwnFile(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%s is not a regular file; move it away", path)
	case st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("%s belongs to uid %d, not to you; move it away", path, st.Uid)
	case st.Nlink != 1:
		return fmt.Errorf("%s has %d names (a hard link); move it away", path, st.Nlink)
	}
	return nil
}

// Now is the time as every event records it.
func Now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// New is an event of kind with message, stamped now.
func New(kind, message string) Event { return Event{Time: Now(), Event: kind, Message: message} }

// SchemaVersion is the version of the event lines' JSON, shared with
// print, explain and status (grok-sandbox help json).
const SchemaVersion = 1

func eventLine(ev Event) ([]byte, error) {
	ev.SchemaVersion = SchemaVersion
	line, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}
