// Package maskfs is the mask observer.
//
// The mask observer: where the launcher could hand over /dev/fuse, the
// masks' sources are not files of a private tmpfs but nodes of a small FUSE
// file system that the init stage serves: from goroutines of pid 1 where it
// goes on after dropping every thread's capabilities, else (a build linked
// with cgo, whose init stage execs itself again) from a helper process.
// Each mask is a node of its own, empty, mode 0000, on a read-only mount,
// and the mount uses default_permissions: the kernel refuses every access
// by its own permission check, exactly as it refuses the tmpfs masks, and
// the server never decides anything. It is only asked, because every
// attribute it hands out expires at once (attr_valid 0), to refresh a
// mask's attributes whenever a process touches it: a stat, an open, a
// directory listing, an exec, a truncate, a walk into a masked directory.
// While the caller waits for the answer, /proc/PID/syscall names the
// syscall it is in, which gives the operation; the node gives the mask, and
// so the deny entry. Unrelated I/O never reaches the server: it costs
// nothing.
//
// A helper process that dies ends the connection, and every mask then fails
// with ENOTCONN: still refused. One that stops answering is cut off by the
// kernel's request timeout (negotiated at INIT where the kernel has it).
//
// pid 1 (launcher/sandboxinit) mounts the masks from NodeName's nodes once
// Start has mounted the file system and started the observer, and logs what
// it reports (Watch) through launcher/sandboxinit/violations; RunObserver
// is the observer itself (the init stage's ObserverArg). Linux only.
package maskfs
