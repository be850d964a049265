//go:build !cgo

package main

// linkedCgo: this test binary links no cgo, like the binary the README
// builds: the init stage drops capabilities on every thread in place.
const linkedCgo = false
