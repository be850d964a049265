//go:build cgo

package initproc

// DropsInPlace says whether DropCapabilitiesEverywhere can work in this
// build: not where cgo may be linked in (the Go runtime cannot change
// every thread of such a binary), so the init stage execs itself again
// after its privileged steps, ending every thread but the caller.
const DropsInPlace = false
