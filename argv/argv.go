// Package argv renders a resolved policy as a bubblewrap command line.
//
// Render is a pure function: the same policy gives the same argv, byte for
// byte, so golden files can pin it. The order of the operations is the
// order bwrap applies them, and later mounts cover earlier ones:
//
//  1. namespaces and privileges (a user namespace with every capability
//     dropped, even for root; a pid namespace; no nested user namespaces
//     unless the policy allows them);
//  2. the base view: the whole file system read-only, or (when the policy
//     does not read everything) only the granted paths on an empty root;
//  3. fresh /dev and /proc;
//  4. every grant, pin and protected path, parents before children;
//  5. masks, after everything they must cover;
//  6. the working directory and the command.
//
// It targets bubblewrap 0.8.0: no --argv0, no --bind-fd, no overlays.
package argv

import (
	"path/filepath"
	"strconv"

	"grok-sandbox/launcher/policy"
)

// procReadOnly are the parts of the fresh /proc bound read-only.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// Options are the Linux facts the policy does not carry.
type Options struct {
	Bwrap string // path of the bwrap binary: argv[0]
	// MaskFile and MaskDir are an empty file and an empty directory, both
	// mode 0000, bound read-only over every denied file and directory: with
	// all capabilities dropped nobody, root included, can open, list, enter,
	// chmod, write, remove or rename them.
	MaskFile string
	MaskDir  string
	// Chdir is the directory the command starts in.
	Chdir string
	// SeccompFD, when not 0, is a descriptor holding a seccomp program that
	// bwrap installs right before it execs the command.
	SeccompFD int
	// Init, when set, is put before the command: grok-sandbox's own stage
	// inside the sandbox, which supervises the command's children or mounts
	// masks bwrap has no room for. InitCaps are the capabilities (in the
	// sandbox's user namespace only) that stage needs and drops before the
	// command runs.
	Init     []string
	InitCaps []string
	// InitMasks is true when the masks are too many for bwrap's argument
	// limit and Init mounts them instead.
	InitMasks bool
	// MapToRoot runs the sandbox as uid and gid 0 of its user namespace
	// (your own ids outside). bwrap then needs no second, nested user
	// namespace for an ordinary user, and only in the first one can Init
	// mount.
	MapToRoot bool
}

// Render returns the full argv, bwrap first, command last. It splits at the
// "--" that separates bwrap's options from the command: Options are the
// arguments before it.
func Render(p *policy.Policy, o Options, command []string) []string {
	out := []string{o.Bwrap}
	out = append(out, Sandbox(p, o)...)
	out = append(out, "--")
	out = append(out, o.Init...)
	return append(out, command...)
}

// Sandbox returns bwrap's options for the policy, without argv[0] and the
// command.
func Sandbox(p *policy.Policy, o Options) []string {
	var a []string
	add := func(args ...string) { a = append(a, args...) }

	add("--unshare-user", "--unshare-pid", "--unshare-ipc")
	if o.MapToRoot {
		add("--uid", "0", "--gid", "0")
	}
	if p.Network.Isolate {
		add("--unshare-net")
	}
	add("--die-with-parent", "--cap-drop", "ALL")
	for _, c := range o.InitCaps {
		add("--cap-add", c)
	}
	// --disable-userns puts the command in a nested user namespace, where
	// an init stage could not mount. When the init stage mounts masks, its
	// seccomp filter refuses new user namespaces instead.
	if !p.NestedUserNS && !o.InitMasks {
		add("--disable-userns")
	}

	layers := p.Layers()
	// The root comes first, whatever grants it: a bind of / after /dev and
	// /proc would cover them with the host's.
	rootBound := true
	if len(layers) > 0 && layers[0].Path == "/" {
		if layers[0].Access == policy.Write {
			add("--bind", "/", "/")
		} else {
			add("--ro-bind", "/", "/")
		}
		layers = layers[1:]
	} else if p.ReadAll {
		add("--ro-bind", "/", "/")
	} else {
		rootBound = false
	}
	add("--dev", "/dev", "--proc", "/proc")
	// Sysctl and sysrq-trigger writes are checked against the uid alone:
	// a root command holding no capability could still rewrite the host's
	// kernel.core_pattern. bwrap 0.8.0 leaves them writable; cover them.
	// (-try: a kernel without sysrq has no sysrq-trigger in either /proc.)
	for _, d := range procReadOnly {
		add("--ro-bind-try", d, d)
	}
	// Links are recreated only on the empty root; where the host's / is
	// bound they are there already (and bwrap cannot replace them).
	if !rootBound {
		for _, l := range p.Links {
			add("--symlink", l.Target, l.Path)
		}
	}
	for _, l := range layers {
		if l.Access == policy.Write {
			add("--bind", l.Path, l.Path)
		} else {
			add("--ro-bind", l.Path, l.Path)
		}
	}
	masks := p.Masks
	if o.InitMasks {
		masks = nil
	}
	for _, m := range masks {
		src := o.MaskFile
		if m.Dir {
			src = o.MaskDir
		}
		add("--ro-bind", src, m.Path)
	}
	if len(masks) > 0 && o.MaskFile != "" {
		// The mask sources live in GROK_HOME, which is writable: make them
		// read-only too, or a chmod inside would turn every mask readable.
		root := filepath.Dir(o.MaskFile)
		add("--ro-bind", root, root)
	}
	if !rootBound {
		// The empty root bwrap starts from is a tmpfs; make it read-only
		// so nothing can be created outside the grants.
		add("--remount-ro", "/")
	}
	if o.Chdir != "" {
		add("--chdir", o.Chdir)
	}
	if o.SeccompFD != 0 {
		add("--seccomp", strconv.Itoa(o.SeccompFD))
	}
	return a
}
