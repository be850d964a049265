//go:build !linux

package resolve

import "io/fs"

func createEmpty(path string, dir bool, mode fs.FileMode) error {
	return createByPath(path, dir, mode, nil)
}

func createWith(path string, dir bool, mode fs.FileMode, content []byte) error {
	return createByPath(path, dir, mode, content)
}
