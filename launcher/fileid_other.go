//go:build !linux

package launcher

import "os"

// fileID is unused off Linux (Seatbelt matches deny rules at run time).
func fileID(path string) (dev, ino uint64, ok bool) {
	_, err := os.Lstat(path)
	return 0, 0, err == nil
}
