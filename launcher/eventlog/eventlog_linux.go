package eventlog

import "golang.org/x/sys/unix"

// AppendFD adds ev through a descriptor opened by Open before
// the sandbox started (the supervisor's, inside a sandbox where the log is
// read-only). A rotation meanwhile sends the line to the rotated file.
func AppendFD(fd int, ev Event) error {
	line, err := eventLine(ev)
	if err != nil {
		return err
	}
	if err := lockBounded(fd); err != nil {
		return err
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	_, err = unix.Write(fd, line)
	return err
}

// AppendFDUnlocked adds ev through fd without waiting for the lock: for a
// supervisor whose log a process in the sandbox keeps locked (the log is
// readable there, and flock needs no more). One O_APPEND write still never
// interleaves with another line; only a rotation at that very moment could
// lose it.
func AppendFDUnlocked(fd int, ev Event) error {
	line, err := eventLine(ev)
	if err != nil {
		return err
	}
	locked := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
	_, err = unix.Write(fd, line)
	if locked {
		_ = unix.Flock(fd, unix.LOCK_UN)
	}
	return err
}
