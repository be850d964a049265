package sandboxinit

import (
	"fmt"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/sandboxinit/initcfg"
)

// The checks of what bwrap and the init stage mounted, read back from the
// kernel before the command starts (see initproc.VerifyThread for the
// thread's own layers).

// verifyIdentity checks, before any mask covers them, that the grants,
// pins and protected paths bwrap mounted are on the files the launcher
// found.
func verifyIdentity(c initcfg.LayerCheck) error {
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

// verifyPaths checks that every masked path is unreadable and read-only and
// every protected path read-only, as the kernel sees them now.
func verifyPaths(c initcfg.LayerCheck) error {
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
