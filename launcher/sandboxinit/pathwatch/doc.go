// Package pathwatch is the path observer.
//
// The path observer: what never reaches a mask's node (a rename, unlink or
// hard link of the mask itself: the kernel refuses it at the mount point,
// EBUSY or EXDEV, before asking the file system) and every write to a
// protected path (a read-only bind: EROFS, decided by the VFS) is seen by
// a seccomp filter on the command that sends the syscalls that change a
// name in a directory, and the opens that may write, to the init stage.
// It reads the paths, logs those that name a denied or protected path and
// lets every syscall go on: the kernel refuses them as before. Reads, stats
// and every other syscall never leave the kernel.
//
// pid 1 (launcher/sandboxinit) adds the observed syscalls to the
// command's notifying filter (seccomp.Rules.Observe) and hands each
// notification to Watch.Seen first; what it finds is logged through
// launcher/sandboxinit/violations. Linux only.
package pathwatch
