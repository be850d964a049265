//go:build cgo

package main

// linkedCgo: this test binary links cgo, so the init stage it runs takes
// the re-exec path (the [cgo] condition of the enforcement scripts).
const linkedCgo = true
