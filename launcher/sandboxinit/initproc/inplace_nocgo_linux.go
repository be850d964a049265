//go:build !cgo

package initproc

// DropsInPlace says whether DropCapabilitiesEverywhere can work in this
// build: a binary without cgo, so the init stage goes on in the same
// process after its privileged steps, and its goroutines with it.
const DropsInPlace = true
