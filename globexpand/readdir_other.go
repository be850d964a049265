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
