package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/net/bpf"

	"grok-sandbox/argv"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/seccomp"
)

// baseRules is the filter every process of an enforcing sandbox carries,
// installed before grok-sandbox's own code runs inside it: terminal
// injection, the keyring, io_uring (whose operations no filter sees: socket
// calls, opens with any mode), setuid or setgid modes, and changes to other
// processes' limits, scheduling and priorities always blocked,
// user namespaces wherever the profile disables nested ones, and under
// isolation the network for everyone.
func baseRules(p *policy.Policy) seccomp.Rules {
	r := seccomp.Rules{
		BlockTerminalInjection: true,
		BlockKeyring:           true,
		BlockUserNamespaces:    !p.NestedUserNS,
		BlockIOURing:           true,
		BlockSetID:             true,
		// Nothing but pid 1 itself changes its limits, scheduling or
		// priorities, or queues it a fault signal (nor its helpers').
		GuardOthers: true,
	}
	if p.Network.Isolate {
		r.Network = seccomp.NetworkDeny
	}
	return r
}

// commandNetwork is the rule of the filter added for the command and its
// children: under restrict_network a supervisor tells the command from its
// children; otherwise nothing beyond the base filter.
func commandNetwork(p *policy.Policy) seccomp.Network {
	if p.Network.RestrictChildren && !p.Network.Isolate {
		return seccomp.NetworkNotify
	}
	return seccomp.NetworkUnfiltered
}

// bwrapNetwork is commandNetwork for a bwrap launch: isolation too goes
// through the supervisor, which then exempts nobody and gives everyone,
// the command included, the private loopback (bwrap's own namespace has
// only a loopback that is down, and path-based Unix sockets reach the
// host from any namespace, so they stay refused).
func bwrapNetwork(p *policy.Policy) seccomp.Network {
	if p.Network.Isolate {
		return seccomp.NetworkNotify
	}
	return commandNetwork(p)
}

// bwrapBaseRules is baseRules for a bwrap launch: under isolation the
// command's filter (bwrapNetwork) carries the network rule instead. Where
// the command runs as you in a user namespace of its own (o.MapToRoot),
// the init stage must make that one namespace: the base filter then
// leaves user namespaces alone, and the command's own filter refuses them
// (see launcher/sandboxinit/starter).
func bwrapBaseRules(p *policy.Policy, o argv.Options) seccomp.Rules {
	r := baseRules(p)
	// The command's own filter decides setpriority with a pid: it lets a
	// process change its own threads' priorities (see launcher/sandboxinit).
	r.PriorityToCommand = true
	if p.Network.Isolate {
		r.Network = seccomp.NetworkUnfiltered
	}
	if o.MapToRoot {
		r.BlockUserNamespaces = false
	}
	return r
}

// childLoopback is whether the command's children (and, isolated, the
// command too) get a private loopback: a bwrap launch under
// restrict_network or isolation.
func childLoopback(p *policy.Policy) bool {
	return bwrapNetwork(p) == seccomp.NetworkNotify
}

// buildProgram is the seccomp program of rules on the host's architecture.
func buildProgram(r seccomp.Rules) ([]bpf.RawInstruction, error) {
	arch, err := seccomp.HostArch()
	if err != nil {
		return nil, resolve.Refuse("%v: terminal injection cannot be blocked here", err)
	}
	return seccomp.Build(r, arch)
}

// encodeProgram lays out a program as the kernel's struct sock_filter array.
func encodeProgram(prog []bpf.RawInstruction) []byte { return seccomp.Encode(prog) }

// bwrapOptions are the Linux facts of a bwrap launch of p.
func bwrapOptions(p *policy.Policy, chdir string, uid int) argv.Options {
	o := argv.Options{
		Bwrap:     "bwrap",
		Chdir:     chdir,
		SeccompFD: initcfg.FDSeccomp,
		// The profile rides on pid 1's command line, which nothing in the
		// sandbox can change (see Status).
		Init: []string{"/proc/self/fd/" + strconv.Itoa(initcfg.FDSelf), initcfg.Command, strconv.Itoa(initcfg.FDInit), p.Profile},
	}
	if childLoopback(p) {
		o.Init = append(o.Init, initcfg.ChildNetArg)
	}
	// Every mask is mounted by the init stage, by descriptor onto the very
	// file resolution found, never by bwrap: bwrap creates a missing
	// mount point through whatever a path holds (creat truncates a file
	// there, through a link planted by a concurrent sandbox), and a
	// concurrent sandbox without this deny entry can write the workspace.
	// (bwrap's mounts also cost time in the square of their number: 1,000
	// masks took it 0.85 s; the init stage mounts 5,000 in about 80 ms.)
	//
	// For the same reason every layer whose mount point lies where a
	// sandbox could write is staged: bwrap binds it on the fresh /dev and
	// the init stage moves it into place, by descriptor.
	o.Staged = stagedLayers(p)
	if len(p.Masks) > 0 || len(o.Staged) > 0 {
		o.InitMasks = len(p.Masks) > 0
		o.InitCaps = []string{"CAP_SYS_ADMIN", "CAP_SETPCAP"}
	}
	// The children's private loopback: the init stage makes their network
	// namespace (CAP_SYS_ADMIN) and brings its lo up (CAP_NET_ADMIN), then
	// drops both (see launcher/sandboxinit/childnet).
	if childLoopback(p) {
		o.InitCaps = []string{"CAP_SYS_ADMIN", "CAP_SETPCAP", "CAP_NET_ADMIN"}
	}
	// An init stage that mounts runs as uid 0 of the sandbox's user
	// namespace (only there can it mount), and starts the command as you
	// in a namespace nested in it, mapping your uid and gid onto its 0:
	// writing that map (its 0 is the namespace's root) takes CAP_SETFCAP.
	// Root is root in both, and needs no second namespace.
	if len(o.InitCaps) > 0 && uid != 0 {
		o.MapToRoot = true
		o.InitCaps = append(o.InitCaps, "CAP_SETFCAP")
		o.Init = append(o.Init, initcfg.AsUserArg)
	}
	return o
}

// stagedLayers are the layers bwrap must not mount onto their own paths:
// those nested in another layer (a view of a host directory, not bwrap's
// empty root) where some directory between that layer and the mount point,
// on the host, is one a sandbox could write. Such a directory could be
// another launch's workspace or grant, and a concurrent sandbox there could
// swap the mount point or a parent for a link, between bwrap's checks and
// its mkdir, creat and mount: bwrap would create directories or truncate a
// file wherever the link points. (A layer on bwrap's empty root has only
// bwrap's own directories above it.) Your own writable directories count
// whatever this profile grants, and so do the ones you own (you can chmod
// them back to writable); for root every directory does.
//
// The kernel-facing mounts (/dev, /proc, /sys) are not layers: their mount
// points are mount points in every sandbox that has them, which no rename
// can move (EBUSY), and only a sandbox that writes / could reach them.
func stagedLayers(p *policy.Policy) map[string]bool {
	layers := p.Layers()
	rootBound := p.ReadAll || (len(layers) > 0 && layers[0].Path == "/")
	writable := func(dir string) bool { return resolve.SandboxCouldWrite(p, dir) }
	var staged map[string]bool
	for i, l := range layers {
		if l.Path == "/" {
			continue
		}
		// The nearest layer above l, or / when bwrap binds the host's root.
		above := ""
		if rootBound {
			above = "/"
		}
		for _, a := range layers[:i] {
			if a.Path != l.Path && policy.Within(l.Path, a.Path) && len(a.Path) >= len(above) {
				above = a.Path
			}
		}
		if above == "" {
			continue
		}
		for dir := filepath.Dir(l.Path); ; dir = filepath.Dir(dir) {
			if writable(dir) {
				if staged == nil {
					staged = map[string]bool{}
				}
				staged[l.Path] = true
				break
			}
			if dir == above || dir == "/" {
				break
			}
		}
	}
	return staged
}

// initFor is the init stage's config for a bwrap launch of p, by uid and
// gid (the launcher's own).
func initFor(p *policy.Policy, o argv.Options, moves []argv.Move, path string, command, env []string, uid, gid int) *initcfg.Config {
	cfg := &initcfg.Config{
		Profile:  p.Profile,
		Path:     path,
		Args:     command,
		Env:      env,
		Dir:      o.Chdir,
		Network:  bwrapNetwork(p),
		ChildNet: childLoopback(p),
		Isolated: p.Network.Isolate,
		Check:    initcfg.LayerCheck{Filters: 1},
	}
	if o.MapToRoot {
		cfg.User = &initcfg.User{UID: uid, GID: gid, BlockUserNamespaces: !p.NestedUserNS}
	}
	if cfg.ChildNet {
		cfg.AllowHosts = p.Network.AllowHosts
	}
	if a := p.Agent; a != nil && a.Program != "" && cfg.Network == seccomp.NetworkNotify && !cfg.Isolated {
		cfg.Agent = &initcfg.PathID{Path: a.Program, Dev: a.ProgramDev, Ino: a.ProgramIno}
	}
	if o.InitMasks {
		cfg.Masks = p.Masks
	}
	cfg.GitDirs = p.GitDirs
	for _, m := range moves {
		dev, ino, _ := resolve.FileID(m.Path)
		cfg.Binds = append(cfg.Binds, initcfg.Bind{Path: m.Path, Stage: m.Stage, ReadOnly: m.ReadOnly, InPlace: m.InPlace, Dev: dev, Ino: ino})
	}
	for _, m := range p.Masks {
		cfg.Check.Masked = append(cfg.Check.Masked, m.Path)
	}
	cfg.Observe = observeFor(p, o)
	if !p.NestedUserNS {
		cfg.Check.ReadOnly = append(cfg.Check.ReadOnly, "/proc")
	}
	cfg.Check.ReadOnly = append(cfg.Check.ReadOnly, "/proc/sys")
	if p.AccessAt("/sys") != policy.Hidden {
		cfg.Check.ReadOnly = append(cfg.Check.ReadOnly, "/sys")
	}
	for _, q := range p.Protected {
		if p.Exposed(q) {
			cfg.Check.ReadOnly = append(cfg.Check.ReadOnly, q)
		}
	}
	for _, l := range p.Layers() {
		if l.Path == "/" {
			continue
		}
		if l.Access == policy.Read {
			cfg.Check.ReadOnly = append(cfg.Check.ReadOnly, l.Path)
		}
		// What the path names now, on the host; a link or a missing path
		// records nothing that the sandbox's view could match.
		dev, ino, _ := resolve.FileID(l.Path)
		cfg.Check.Identity = append(cfg.Check.Identity, initcfg.PathID{Path: l.Path, Dev: dev, Ino: ino})
	}
	return cfg
}

// encodeInit is cfg as the init stage reads it (initcfg.Encode).
func encodeInit(cfg *initcfg.Config) ([]byte, error) {
	return initcfg.Encode(cfg)
}

// observeFor is how the init stage observes touches of p's denied and
// protected paths; nil when there are none (nothing is observed, at no
// cost). The masks' own nodes see every touch of a mask where the launcher
// can hand over /dev/fuse (Fuse asks for it; see execBwrap); a seccomp
// filter on the command sees what never reaches a mask (renaming, removing
// or linking it) and every write to a protected path.
func observeFor(p *policy.Policy, o argv.Options) *initcfg.Observe {
	var protected []initcfg.Watched
	for _, q := range p.Protected {
		if p.Exposed(q) {
			protected = append(protected, initcfg.Watched{Path: q, Entry: p.ProtectedWhy[q]})
		}
	}
	if m, _ := ObserveMode(); m == ObserveOff || !o.InitMasks && len(protected) == 0 {
		return nil
	}
	return &initcfg.Observe{Fuse: o.InitMasks, Paths: true, Protected: protected}
}

// FuseDevice is the FUSE device the mask observer needs.
const FuseDevice = "/dev/fuse"

// ObserveModeValue is what GROK_SANDBOX_OBSERVE asks of the violation observer.
type ObserveModeValue string

const (
	// ObserveAll (GROK_SANDBOX_OBSERVE unset): the mask observer where
	// /dev/fuse opens, and the command's seccomp observer.
	ObserveAll ObserveModeValue = ""
	// ObserveNoFuse: no mask observer (opens, stats, listings and execs
	// of denied paths go unlogged); the seccomp observer stays.
	ObserveNoFuse ObserveModeValue = "nofuse"
	// ObserveOff: no observer at all; nothing on paths is logged.
	ObserveOff ObserveModeValue = "off"
)

// ObserveMode reads GROK_SANDBOX_OBSERVE; any other value is an error (a
// run refuses it).
func ObserveMode() (ObserveModeValue, error) {
	switch v := ObserveModeValue(os.Getenv("GROK_SANDBOX_OBSERVE")); v {
	case ObserveAll, ObserveNoFuse, ObserveOff:
		return v, nil
	default:
		return "", fmt.Errorf("GROK_SANDBOX_OBSERVE=%s: only nofuse and off are understood (unset: observe everything)", printable.String(string(v)))
	}
}
