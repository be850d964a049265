// Package eventlog writes GROK_HOME/sandbox-events.jsonl: one JSON object a
// line, mode 0600, bounded in size, safe under concurrent launches. Opening
// it never blocks and never follows a link, and its lock is waited for a
// bounded time, so nothing a sandbox plants at its path (a FIFO, a link, a
// held lock) can hang a launch or send a line elsewhere.
package eventlog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Event is one line of GROK_HOME/sandbox-events.jsonl.
type Event struct {
	Time      string `json:"time"`
	Event     string `json:"event"` // applied, disabled, refused, degraded, violation
	Profile   string `json:"profile,omitempty"`
	Source    string `json:"source,omitempty"`
	Backend   string `json:"backend,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Command   string `json:"command,omitempty"`
	Message   string `json:"message,omitempty"`
}

const (
	Name = "sandbox-events.jsonl"
	// Max bounds the log: past it, the file is moved to
	// sandbox-events.jsonl.1 (replacing the previous one), so at most about
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
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = fmt.Errorf("%s is not a regular file; move it away", path)
	case st.Uid != uint32(os.Geteuid()):
		err = fmt.Errorf("%s belongs to uid %d, not to you; move it away", path, st.Uid)
	case st.Nlink != 1:
		err = fmt.Errorf("%s has %d names (a hard link); move it away", path, st.Nlink)
	}
	if err != nil {
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
func Append(grokHome string, ev Event) error {
	line, err := eventLine(ev)
	if err != nil {
		return err
	}
	path := filepath.Join(grokHome, Name)
	for attempt := 0; attempt < 3; attempt++ {
		f, err := Open(grokHome)
		if err != nil {
			return err
		}
		if err := lockBounded(int(f.Fd())); err != nil {
			f.Close()
			return err
		}
		// Another launch may have rotated the file between open and lock:
		// then this descriptor points at the old file; start over.
		fi, err1 := f.Stat()
		cur, err2 := os.Lstat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, cur) {
			f.Close()
			continue
		}
		if fi.Size()+int64(len(line)) > Max && fi.Size() > 0 {
			// Rename replaces the rotation file's name, never writes
			// through it: a link planted there is replaced, not followed.
			if err := os.Rename(path, path+".1"); err != nil {
				f.Close()
				return err
			}
			f.Close()
			continue
		}
		_, err = f.Write(line)
		f.Close()
		return err
	}
	return nil
}

// LockWait bounds how long a launch or the supervisor waits for the event
// log's lock. Anyone who can read the log can hold its lock (a read-only
// descriptor is enough for flock): waiting forever would let a sandboxed
// process hang every later launch, or the supervisor and with it the
// command.
const LockWait = 500 * time.Millisecond

func lockBounded(fd int) error {
	deadline := time.Now().Add(LockWait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the event log is locked by another process (for over %v); event not written", LockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Now is the time as every event records it.
func Now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// New is an event of kind with message, stamped now.
func New(kind, message string) Event { return Event{Time: Now(), Event: kind, Message: message} }

func eventLine(ev Event) ([]byte, error) {
	line, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}
