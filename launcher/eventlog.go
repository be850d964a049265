package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"

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
	eventLogName = "sandbox-events.jsonl"
	// MaxEventLog bounds the log: past it, the file is moved to
	// sandbox-events.jsonl.1 (replacing the previous one), so at most about
	// twice this much is kept.
	MaxEventLog = 1 << 20
)

// AppendEvent adds ev to the event log in GROK_HOME. The file is created
// with mode 0600 and written with one O_APPEND write per line under an
// exclusive lock, so that concurrent launches never interleave or lose a
// line, and rotation never races an append.
func AppendEvent(grokHome string, ev Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	path := filepath.Join(grokHome, eventLogName)
	for attempt := 0; attempt < 3; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
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
		if fi.Mode().Perm() != 0o600 {
			_ = f.Chmod(0o600)
		}
		if fi.Size()+int64(len(line)) > MaxEventLog && fi.Size() > 0 {
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
