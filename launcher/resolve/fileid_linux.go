package resolve

import "golang.org/x/sys/unix"

// FileID is the device and inode of path (not following a link at path).
func FileID(path string) (dev, ino uint64, ok bool) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, 0, false
	}
	return st.Dev, st.Ino, true
}
