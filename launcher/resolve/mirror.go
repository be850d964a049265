package resolve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// maxMirror bounds a mirrored state file: Claude Code's ~/.claude.json is
// kilobytes, a few megabytes with a long project history.
const maxMirror = 64 << 20

// syncMirror keeps orig and its copy in step, outside any sandbox, at a
// launch: the newer of the two (by modification time) is written over the
// other, through a temporary file beside it and a rename, with its time,
// so that the next launch finds them equal. Neither is ever followed as a
// link or opened as anything but a regular file: the copy lies in a
// directory every sandbox of the agent writes. While the agent holds its
// lock on orig (orig.lock, a directory) orig is left alone.
func syncMirror(orig, copy string) error {
	o, err := readState(orig)
	if err != nil {
		return err
	}
	c, err := readState(copy)
	if err != nil {
		return err
	}
	// The copy's time is the sandbox's to set: a time to come would make
	// it win at every launch, over your own edits of orig. Such a copy is
	// taken for the older.
	if c != nil && time.Unix(c.mtime.Unix()).After(time.Now().Add(time.Minute)) {
		if o == nil {
			return fmt.Errorf("%s is dated in the future; not copied over %s", copy, orig)
		}
		return writeState(copy, o)
	}
	switch {
	case o == nil && c == nil:
		return nil
	case c == nil || (o != nil && o.newer(c)):
		return writeState(copy, o)
	case o == nil || c.newer(o):
		if err := unix.Lstat(orig+".lock", new(unix.Stat_t)); err == nil {
			return nil
		}
		return writeState(orig, c)
	}
	return nil
}

type stateFile struct {
	data  []byte
	mtime unix.Timespec
}

func (a *stateFile) newer(b *stateFile) bool {
	if a.mtime == b.mtime || string(a.data) == string(b.data) {
		return false
	}
	return a.mtime.Sec > b.mtime.Sec || a.mtime.Sec == b.mtime.Sec && a.mtime.Nsec > b.mtime.Nsec
}

// readState reads path, a regular file, without following a link or
// blocking on a FIFO; nil when it does not exist.
func readState(path string) (*stateFile, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size > maxMirror {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, maxMirror>>20)
	}
	data := make([]byte, 0, st.Size)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if n == 0 {
			break
		}
		if len(data)+n > maxMirror {
			return nil, fmt.Errorf("%s is larger than %d MiB", path, maxMirror>>20)
		}
		data = append(data, buf[:n]...)
	}
	return &stateFile{data: data, mtime: st.Mtim}, nil
}

// writeState replaces path with f (mode 0600, f's time) through a new
// temporary file in its directory and a rename, which replaces whatever
// the name holds (a link included) without following it.
func writeState(path string, f *stateFile) error {
	dir, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + filepath.Base(path) + ".grok-sandbox." + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
		if !ok {
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	}()
	for data := f.data; len(data) > 0; {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	tv := unix.NsecToTimeval(unix.TimespecToNsec(f.mtime))
	if err := unix.Futimes(fd, []unix.Timeval{tv, tv}); err != nil {
		return err
	}
	unix.Close(fd)
	fd = -1
	if err := unix.Renameat(dir, tmp, dir, filepath.Base(path)); err != nil {
		return err
	}
	ok = true
	return nil
}
