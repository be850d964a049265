//go:build !linux

package globexpand

import "io/fs"

// eachEntry calls fn for every entry of dir.
func eachEntry(dir string, fn func(name string, typ fs.FileMode) bool) error {
	ents, err := readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !fn(e.Name(), e.Type()) {
			return nil
		}
	}
	return nil
}

// readDir returns the entries unsorted. File.ReadDir takes the type from
// d_type and only calls lstat when the file system does not fill it in.
func readDir(dir string) ([]fs.DirEntry, error) {
	f, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
