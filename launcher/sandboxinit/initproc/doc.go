// Package initproc is what each process of the init stage does to itself
// or to a process it starts: drop every capability for good, read its
// thread's confinement back from the kernel (VerifyThread), keep a
// descriptor across an exec at a fixed number (PlaceFD) or none at all
// (CloseFrom), read a config descriptor without an os.File (ReadFD),
// survive the signals anything in the sandbox can send (ShrugSignals,
// CatchSignals), and start a helper with no descriptor but its own
// (StartClean). pid 1 (launcher/sandboxinit) and each of its parts use it;
// it imports none of them. Linux only.
package initproc
