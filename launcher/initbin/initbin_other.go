//go:build !linux

package initbin

// Open: the init stage is Linux's (bwrap).
func Open() (fd int, why string) { return -1, "the init stage runs on Linux only" }
