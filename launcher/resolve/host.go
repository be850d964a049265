package resolve

// Host is the fixed shape of the machine a policy is resolved on: the facts
// that resolution takes as given rather than decides. launcher.ProbeHost
// reads them from the real host, once a run; tests give a fake one, so that
// a policy can be pinned whatever the machine running the tests has (/lib32
// or not, resolv.conf in /run or not).
//
// What is not here on purpose: whatever a security check must read at the
// moment it decides (the links on a grant's path and who can write their
// directories, the files hook protection holds and the masks' identities,
// git's config). Those are read from the real file system where they are
// used, since a sandbox could change them between a probe and its use.
type Host struct {
	// OS is the host's platform (runtime.GOOS). A policy for another
	// target is resolved from that platform's fixed rules alone.
	OS string
	// Cwd is the current directory as os.Getwd gives it; LocateDirs makes
	// it canonical. CwdErr is why there is none (the directory was
	// removed, say): every run is refused then.
	Cwd    string
	CwdErr error
	// SystemPaths are the entries of LinuxSystemPaths that the host has
	// as a directory or a symbolic link, in that list's order; what strict
	// exposes on Linux.
	SystemPaths []SystemPath
	// ResolvConf is where /etc/resolv.conf leads, canonical; "" when it
	// does not resolve. Strict exposes it when that is outside /etc and
	// /usr (systemd-resolved's /run/systemd/resolve, say).
	ResolvConf string
	// RootDirs are the directories at the top of the file system, not the
	// links there ("/bin" on a merged-/usr host), sorted: what devbox makes
	// writable, less the kernel's and /data. RootErr is why / could not
	// be listed, which only devbox refuses.
	RootDirs []string
	RootErr  error
}

// SystemPath is one of LinuxSystemPaths as the host has it.
type SystemPath struct {
	Path string
	// Link is what the symbolic link at Path says ("usr/bin" for /bin on a
	// merged-/usr host); "" when Path is a directory. LinkErr is why a
	// link could not be read, which strict refuses.
	Link    string
	LinkErr error
	// Target is the link's canonical destination; "" when it does not
	// resolve (a dangling link is kept as a link, and nothing is granted).
	Target string
}
