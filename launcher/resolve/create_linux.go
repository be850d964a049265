package resolve

import (
	"errors"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createEmpty creates path as an empty directory or file. Its directory is
// opened with no symlink allowed anywhere on the way (the paths given are
// canonical), and the entry is made relative to that descriptor: a
// directory that a concurrent sandbox swaps for a link after it was checked
// cannot send the creation elsewhere.
func createEmpty(path string, dir bool, mode fs.FileMode) error {
	return createWith(path, dir, mode, nil)
}

// createWith is createEmpty for a file that holds content.
func createWith(path string, dir bool, mode fs.FileMode, content []byte) error {
	dfd, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(path), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.6: the path-based creation, which never follows
		// a link at path itself.
		return createByPath(path, dir, mode, content)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	defer unix.Close(dfd)
	name := filepath.Base(path)
	want := uint32(unix.S_IFREG)
	if dir {
		want = unix.S_IFDIR
	}
	// Made meanwhile by another launch (two first launches at once both
	// found it missing): what it made is taken as if it had been there,
	// when it is of the kind wanted and no link.
	made := func() bool {
		var st unix.Stat_t
		return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == want
	}
	if dir {
		if err := unix.Mkdirat(dfd, name, uint32(mode.Perm())); err != nil {
			if err == unix.EEXIST && made() {
				return nil
			}
			return &fs.PathError{Op: "mkdir", Path: path, Err: err}
		}
	} else {
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
		if err == unix.EEXIST && made() {
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "create", Path: path, Err: err}
		}
		if len(content) > 0 {
			if _, err := unix.Write(fd, content); err != nil {
				unix.Close(fd)
				return &fs.PathError{Op: "write", Path: path, Err: err}
			}
		}
		unix.Close(fd)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != want {
		return &fs.PathError{Op: "create", Path: path, Err: errors.New("replaced while it was being created")}
	}
	return nil
}
