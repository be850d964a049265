package globexpand

import (
	"encoding/binary"
	"io/fs"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// eachEntry calls fn for every entry of dir except "." and "..", reading
// getdents64 records straight from the kernel: no DirEntry per entry, and
// the type from d_type (lstat only where the file system leaves it out).
// The name passed to fn is valid only during the call.
func eachEntry(dir string, fn func(name string, typ fs.FileMode) bool) error {
	f, err := openDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var opErr error
	stop := false
	err = rc.Read(func(fd uintptr) bool {
		for !stop {
			n, err := unix.Getdents(int(fd), buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				opErr = err
				return true
			}
			if n <= 0 {
				return true
			}
			for off := 0; off < n; {
				reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
				typ := buf[off+18]
				nameBytes := buf[off+19 : off+reclen]
				for i, c := range nameBytes {
					if c == 0 {
						nameBytes = nameBytes[:i]
						break
					}
				}
				off += reclen
				if len(nameBytes) == 1 && nameBytes[0] == '.' || len(nameBytes) == 2 && nameBytes[0] == '.' && nameBytes[1] == '.' {
					continue
				}
				name := unsafe.String(unsafe.SliceData(nameBytes), len(nameBytes))
				mode, ok := direntMode(typ)
				if !ok {
					fi, err := os.Lstat(dir + "/" + name)
					if err != nil {
						if isNotExist(err) {
							continue
						}
						opErr = err
						return true
					}
					mode = fi.Mode().Type()
				}
				if !fn(name, mode) {
					stop = true
					return true
				}
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return opErr
}

func direntMode(t byte) (fs.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}
