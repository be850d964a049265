// Package argv renders a resolved policy as a bubblewrap command line.
//
// Render is a pure function: the same policy gives the same Launch, byte for
// byte, so golden files can pin it. The order of the operations is the
// order bwrap applies them, and later mounts cover earlier ones:
//
//  1. namespaces and privileges (a user namespace with every capability
//     dropped, even for root; a pid namespace whose pid 1 is grok-sandbox's
//     init stage; no nested user namespaces unless the policy allows them);
//  2. the base view: the whole file system read-only, or (when the policy
//     does not read everything) only the granted paths on an empty root;
//  3. every grant, pin and protected path that is not staged, parents
//     before children;
//  4. the kernel-facing protections, after every grant so that no grant can
//     undo them: a fresh /dev, a fresh /proc that is read-only as a whole
//     (no process can write another's memory through /proc/PID/mem; not
//     where nested user namespaces are allowed) with /proc/sys and friends
//     read-only, and /sys read-only;
//  5. the staged layers, each bound under StageDir on that fresh /dev, for
//     the init stage to move onto its path after all of this (a read-only
//     one the layer above already shows at its path the init stage makes
//     read-only in place instead);
//  6. the working directory, the seccomp filter, and the init stage.
//
// Masks are not bwrap's: the init stage mounts them after all of this, by
// descriptor onto the very file resolution found. Nor are the mount points
// of staged layers: bwrap creates a missing mount point through whatever
// the path holds when it gets there (mkdir of every missing parent, creat
// of a file, which truncates), and a concurrent sandbox that may write the
// directory can put a link there. A staged layer is bound by bwrap under
// StageDir, on the fresh /dev that no other sandbox sees, and moved onto its
// path by the init stage, by descriptor, with no link on the way.
//
// It targets bubblewrap 0.8.0: no --argv0, no --bind-fd, no overlays.
package argv

import (
	"strconv"

	"grok-sandbox/launcher/policy"
)

// procReadOnly are the parts of the fresh /proc bound read-only. They are
// mounts of their own, so the read-only remount of /proc does not reach
// them.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// Options are the Linux facts the policy does not carry.
type Options struct {
	Bwrap string // path of the bwrap binary: argv[0]
	// Chdir is the directory the command starts in.
	Chdir string
	// SeccompFD is the descriptor holding the base seccomp program that
	// bwrap installs right before it execs the init stage, so that every
	// process in the sandbox, the init stage included, carries it.
	SeccompFD int
	// Init is what bwrap execs: grok-sandbox's own stage inside the
	// sandbox, which checks the layers, starts the command and stays as
	// pid 1. It never holds the command's arguments, so they never count
	// against bwrap's limits.
	Init []string
	// InitCaps are the capabilities (in the sandbox's user namespace only)
	// the init stage needs and drops before the command runs.
	InitCaps []string
	// InitMasks is true when the policy has masks: Init mounts them (bwrap
	// never does; see the package doc).
	InitMasks bool
	// Staged are the layers bwrap binds under StageDir instead of onto
	// their paths, for the init stage to move there: those whose mount
	// point lies in a directory some sandbox could write. Render stages a
	// staged layer's descendants too (its move would cover them).
	Staged map[string]bool
	// MapToRoot runs the sandbox as uid and gid 0 of its user namespace
	// (your own ids outside). bwrap then needs no second, nested user
	// namespace for an ordinary user, and only in the first one can Init
	// mount.
	MapToRoot bool
}

// Launch is a rendered bwrap invocation. The boundary between bwrap's
// options and what bwrap execs is carried here as two lists, never
// recomputed from an index: Options may move to an --args descriptor,
// Command may not.
type Launch struct {
	Bwrap   string
	Options []string
	Command []string
	// Moves are the staged layers, in the order the init stage must move
	// them onto their paths (parents first).
	Moves []Move
}

// StageDir is where bwrap binds the staged layers: inside the fresh /dev,
// a tmpfs of this sandbox's own, so that creating their mount points there
// cannot be redirected.
const StageDir = "/dev/.grok-sandbox-stage"

// Move is one staged layer: bwrap binds Path at Stage, the init stage moves
// that mount onto Path. An InPlace one has no Stage: the init stage binds
// what the sandbox shows at Path (through the layer above it, a view of the
// host's same path) onto itself, read-only.
type Move struct {
	Path     string
	Stage    string
	ReadOnly bool
	InPlace  bool
}

// underKernelMount is whether path lies where bwrap mounts a fresh file
// system of the sandbox's own (/dev, /proc, /sys): there the sandbox does not
// show the host's file at the path.
func underKernelMount(path string) bool {
	for _, m := range []string{"/dev", "/proc", "/sys"} {
		if policy.Within(path, m) {
			return true
		}
	}
	return false
}

// Argv is the whole command line: bwrap, its options, "--", the command.
func (l Launch) Argv() []string {
	out := append([]string{l.Bwrap}, l.Options...)
	out = append(out, "--")
	return append(out, l.Command...)
}

// Render returns the bwrap invocation for the policy.
func Render(p *policy.Policy, o Options) Launch {
	var a []string
	add := func(args ...string) { a = append(a, args...) }

	add("--unshare-user", "--unshare-pid", "--unshare-ipc", "--as-pid-1")
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
	// an init stage could not mount. When the init stage mounts (masks,
	// staged layers), the seccomp filter's refusal of new user namespaces is
	// the guard.
	if !p.NestedUserNS && len(o.InitCaps) == 0 {
		add("--disable-userns")
	}

	layers := p.Layers()
	// The root comes first, whatever grants it.
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
	layers = protectedFirst(p, layers)
	// Links are recreated only on the empty root; where the host's / is
	// bound they are there already (and bwrap cannot replace them).
	if !rootBound {
		for _, l := range p.Links {
			add("--symlink", l.Target, l.Path)
		}
	}
	bind := func(l policy.Layer, dest string) {
		if l.Access == policy.Write {
			add("--bind", l.Path, dest)
		} else {
			add("--ro-bind", l.Path, dest)
		}
	}
	// A layer under a staged one is staged too, whatever Staged says: the
	// move of its parent would otherwise cover it.
	var staged []policy.Layer
	underStaged := func(path string) bool {
		for _, s := range staged {
			if policy.Within(path, s.Path) {
				return true
			}
		}
		return false
	}
	for _, l := range layers {
		if o.Staged[l.Path] || underStaged(l.Path) {
			staged = append(staged, l)
			continue
		}
		bind(l, l.Path)
	}

	add("--dev", "/dev", "--proc", "/proc")
	// Sysctl and sysrq-trigger writes are checked against the uid alone:
	// a root command holding no capability could still rewrite the host's
	// kernel.core_pattern. bwrap 0.8.0 leaves them writable; cover them.
	// (-try: a kernel without sysrq has no sysrq-trigger in either /proc.)
	for _, d := range procReadOnly {
		add("--ro-bind-try", d, d)
	}
	// With /proc read-only, opening /proc/PID/mem for writing fails
	// (EROFS) for every process, whatever Yama says: nothing in the sandbox
	// can plant code in another process. Where nested user namespaces are
	// allowed (devbox) /proc stays writable, or no process could write its
	// uid_map; there the init stage, non-dumpable, is out of reach all the
	// same, and no process has a network the others lack.
	if !p.NestedUserNS {
		add("--remount-ro", "/proc")
	}
	if p.AccessAt("/sys") != policy.Hidden {
		// Recursively read-only, even under a writable grant of /.
		add("--ro-bind", "/sys", "/sys")
	}

	// The staged layers last, on the fresh /dev: the init stage moves them
	// after all of the above, so none is covered by it. A read-only one
	// that the sandbox already shows at its own path, through the layer
	// above it, is not bwrap's at all: the init stage makes that very
	// file read-only where it is (a bind of bwrap's rereads the whole
	// mount table, and a protected file costs it one each).
	var moves []Move
	n := 0
	for _, l := range staged {
		m := Move{Path: l.Path, ReadOnly: l.Access != policy.Write}
		if m.ReadOnly && !underKernelMount(l.Path) {
			m.InPlace = true
		} else {
			m.Stage = StageDir + "/" + strconv.Itoa(n)
			n++
			bind(l, m.Stage)
		}
		moves = append(moves, m)
	}

	l := Launch{Bwrap: o.Bwrap, Moves: moves}
	if !rootBound {
		// The empty root bwrap starts from is a tmpfs; make it read-only
		// so nothing can be created outside the grants.
		add("--remount-ro", "/")
	}
	if o.Chdir != "" {
		add("--chdir", o.Chdir)
	}
	add("--seccomp", strconv.Itoa(o.SeccompFD))
	l.Options = a
	l.Command = append([]string(nil), o.Init...)
	return l
}

// protectedFirst orders the layers that lead to a protected path (its
// ancestors and itself) before all others, each group parents first. That
// is still an order in which no mount covers a deeper one made earlier (an
// ancestor of a protected path leads to it too), and it makes every
// protected file read-only before bwrap mounts anything a concurrent
// sandbox could swap for a link: bwrap creates a missing mount point with
// creat, and a link swapped in meanwhile could otherwise send that onto a
// protected file and truncate it.
func protectedFirst(p *policy.Policy, layers []policy.Layer) []policy.Layer {
	leads := func(path string) bool {
		for _, q := range p.Protected {
			if policy.Within(q, path) {
				return true
			}
		}
		return false
	}
	var first, rest []policy.Layer
	for _, l := range layers {
		if leads(l.Path) {
			first = append(first, l)
		} else {
			rest = append(rest, l)
		}
	}
	return append(first, rest...)
}
