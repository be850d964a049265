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
