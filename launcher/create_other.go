//go:build !linux

package launcher

import "io/fs"

func createEmpty(path string, dir bool, mode fs.FileMode) error {
	return createEmptyByPath(path, dir, mode)
}
