package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/sandboxinit/maskfs"
)

// maskStaging is where the init stage stages the masks' sources: /dev/shm
// in the sandbox's /dev (mounting over it there changes nothing outside the
// sandbox's mount namespace; a mask under it is refused). The staging tmpfs
// is detached before anything else runs, so afterwards no path reaches the
// sources, in this sandbox or any other.
const maskStaging = "/dev/shm"

// mountMasks covers each masked file or directory with an empty, mode-0000,
// read-only file or directory of a private tmpfs (staged, then detached:
// afterwards no path reaches the sources, in this sandbox or any other).
//
// Each target is opened without following any link on the way
// (RESOLVE_NO_SYMLINKS), checked to be the very file resolution found on
// the host (device and inode), and mounted onto through its descriptor: a
// concurrent sandbox that swapped the path meanwhile (for a link, another
// file, a directory) makes the launch refuse, and can never make this
// mount, or create or truncate, anything anywhere else.
//
// With observe (the launcher handed over /dev/fuse on initcfg.FDFuse),
// the sources are the mask observer's nodes, one a mask
// (see launcher/sandboxinit/maskfs); where it cannot start, the tmpfs ones, with a
// warning.
func mountMasks(masks []policy.Mask, observe bool) (observer int, err error) {
	for _, m := range masks {
		if policy.Within(m.Path, maskStaging) {
			return 0, fmt.Errorf("cannot mask %s: the init stage stages masks in %s", m.Path, maskStaging)
		}
	}
	fused := false
	if _, err := unix.FcntlInt(uintptr(initcfg.FDFuse), unix.F_GETFD, 0); observe && err == nil && len(masks) > 0 {
		if observer, err = maskfs.Start(maskStaging, masks); err != nil {
			fmt.Fprintf(os.Stderr, "grok-sandbox: warning: touches of denied paths will not be logged in this run: %v\n", err)
		} else {
			fused = true
		}
	}
	defer unix.Unmount(maskStaging, unix.MNT_DETACH)
	file, dir := maskStaging+"/file", maskStaging+"/dir"
	if !fused {
		if err := mountTmpfsMasks(file, dir); err != nil {
			return 0, err
		}
	}
	// Masks in one directory share its descriptor (opened without links
	// once): a glob's thousands of matches usually sit in a few.
	parent, parentFD := "", -1
	defer func() {
		if parentFD >= 0 {
			unix.Close(parentFD)
		}
	}()
	for i, m := range masks {
		src := file
		if m.Dir {
			src = dir
		}
		if fused {
			src = maskStaging + "/" + maskfs.NodeName(i)
		}
		if d := filepath.Dir(m.Path); d != parent {
			if parentFD >= 0 {
				unix.Close(parentFD)
			}
			if parentFD, err = openNoLinks(d); err != nil {
				return observer, fmt.Errorf("cannot mask %s: %v (was a directory above it moved or replaced by a link during the launch?)", m.Path, err)
			}
			parent = d
		}
		if err := maskOne(parentFD, src, m); err != nil {
			return observer, err
		}
	}
	if err := unix.Unmount(maskStaging, unix.MNT_DETACH); err != nil {
		return observer, fmt.Errorf("cannot detach the masks' staging tmpfs: %v", err)
	}
	return observer, nil
}

// mountTmpfsMasks makes the two sources of the masks without an observer:
// an empty file and an empty directory, mode 0000, on a read-only tmpfs.
func mountTmpfsMasks(file, dir string) error {
	if err := unix.Mount("tmpfs", maskStaging, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700"); err != nil {
		return fmt.Errorf("cannot mount the masks' tmpfs on %s: %v", maskStaging, err)
	}
	f, err := unix.Open(file, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("creating the file mask: %v", err)
	}
	unix.Close(f)
	if err := unix.Mkdir(dir, 0); err != nil {
		return fmt.Errorf("creating the directory mask: %v", err)
	}
	// Read-only before any bind: every bind of it is read-only from the
	// start.
	if err := unix.Mount("", maskStaging, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("making the masks read-only: %v", err)
	}
	return nil
}

// openNoLinks opens path as an O_PATH descriptor, one component at a
// time, refusing a symbolic link anywhere on the way (what openat2's
// RESOLVE_NO_SYMLINKS does; the base filter refuses openat2 itself).
func openNoLinks(path string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if path == "/" {
		return fd, nil
	}
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" || name == "." || name == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%q is not a clean path", path)
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, fmt.Errorf("%s is a symbolic link", name)
		}
		fd = next
	}
	return fd, nil
}

// moveStaged moves each staged layer onto its path, parents first,
// entirely through descriptors: the staged mount (bwrap bound it on this
// sandbox's own /dev) and its destination are each opened with no link on
// the way and checked to be the file or directory found at launch, and
// move_mount takes one to the other. No path is resolved twice, and nothing
// is ever created outside /dev. Then the staging mount points go.
//
// A layer bound in place (Bind.InPlace) has no staged mount: the file the
// sandbox shows at its path, opened the same way and checked the same way,
// is cloned (open_tree), the clone made read-only (every mount in it), and
// moved onto that very descriptor.
func moveStaged(binds []initcfg.Bind) error {
	for _, b := range binds {
		move := moveOne
		if b.InPlace {
			move = lockInPlace
		}
		if err := move(b); err != nil {
			return fmt.Errorf("cannot mount %s: %v", b.Path, err)
		}
	}
	stageDir := ""
	for i := len(binds) - 1; i >= 0; i-- {
		if binds[i].InPlace {
			continue
		}
		err := unix.Unlink(binds[i].Stage)
		if err == unix.EISDIR {
			err = unix.Rmdir(binds[i].Stage)
		}
		if err != nil {
			return fmt.Errorf("cannot remove the staging point %s: %v", binds[i].Stage, err)
		}
		stageDir = filepath.Dir(binds[i].Stage)
	}
	if stageDir != "" {
		if err := unix.Rmdir(stageDir); err != nil {
			return fmt.Errorf("cannot remove %s: %v", stageDir, err)
		}
	}
	return nil
}

// sameFile is an error unless fd refers to the file b records.
func sameFile(fd int, b initcfg.Bind) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Dev != b.Dev || st.Ino != b.Ino {
		return errors.New("it is not what was found at launch (it was replaced meanwhile); refusing")
	}
	return nil
}

// lockInPlace binds the file at b.Path onto itself, read-only: the same
// file, on the same mount, as a bind of the host's path would give, minus
// the write access (see moveStaged).
func lockInPlace(b initcfg.Bind) error {
	fd, err := openNoLinks(b.Path)
	if err != nil {
		return fmt.Errorf("%v (was it or a directory above it replaced during the launch?)", err)
	}
	defer unix.Close(fd)
	if err := sameFile(fd, b); err != nil {
		return err
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %v", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %v", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %v", err)
	}
	return nil
}

func moveOne(b initcfg.Bind) error {
	same := func(fd int) error { return sameFile(fd, b) }
	src, err := openNoLinks(b.Stage)
	if err != nil {
		return fmt.Errorf("staged mount: %v", err)
	}
	defer unix.Close(src)
	if err := same(src); err != nil {
		return fmt.Errorf("what bwrap bound: %v", err)
	}
	dst, err := openNoLinks(b.Path)
	if err != nil {
		return fmt.Errorf("%v (was it or a directory above it replaced during the launch?)", err)
	}
	defer unix.Close(dst)
	if err := same(dst); err != nil {
		return err
	}
	if err := unix.MoveMount(src, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %v", err)
	}
	return nil
}

func maskOne(parentFD int, src string, m policy.Mask) error {
	fd, err := unix.Openat(parentFD, filepath.Base(m.Path), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot mask %s: %v (was it moved or replaced by a link during the launch?)", m.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("cannot mask %s: %v", m.Path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if st.Dev != m.Dev || st.Ino != m.Ino || isDir != m.Dir {
		return fmt.Errorf("cannot mask %s: it is not the file found at launch (it was replaced meanwhile); refusing", m.Path)
	}
	target := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("cannot mask %s: %v", m.Path, err)
	}
	return nil
}
