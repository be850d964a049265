package launcher

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"

	"grok-sandbox/argv"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit"
	"grok-sandbox/launcher/seccomp"
)

// baseRules is the filter every process of an enforcing sandbox carries,
// installed before grok-sandbox's own code runs inside it: terminal
// injection, the keyring, io_uring (whose operations no filter sees: socket
// calls, opens with any mode) and setuid or setgid modes always blocked,
// user namespaces wherever the profile disables nested ones, and under
// isolation the network for everyone.
func baseRules(p *policy.Policy) seccomp.Rules {
	r := seccomp.Rules{
		BlockTerminalInjection: true,
		BlockKeyring:           true,
		BlockUserNamespaces:    !p.NestedUserNS,
		BlockIOURing:           true,
		BlockSetID:             true,
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

// buildProgram is the seccomp program of rules on the host's architecture.
func buildProgram(r seccomp.Rules) ([]bpf.RawInstruction, error) {
	arch, err := seccomp.HostArch()
	if err != nil {
		return nil, resolve.Refuse("%v: terminal injection cannot be blocked here", err)
	}
	return seccomp.Build(r, arch)
}

// encodeProgram lays out a program as the kernel's struct sock_filter array.
func encodeProgram(prog []bpf.RawInstruction) []byte {
	out := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out
}

// bwrapOptions are the Linux facts of a bwrap launch of p.
func bwrapOptions(p *policy.Policy, chdir string, uid int) argv.Options {
	o := argv.Options{
		Bwrap:     "bwrap",
		Chdir:     chdir,
		SeccompFD: sandboxinit.FDSeccomp,
		// The profile rides on pid 1's command line, which nothing in the
		// sandbox can change (see Status).
		Init: []string{"/proc/self/fd/" + strconv.Itoa(sandboxinit.FDSelf), sandboxinit.Command, strconv.Itoa(sandboxinit.FDInit), p.Profile},
	}
	// Every mask is mounted by the init stage, by descriptor onto the very
	// file resolution found, never by bwrap: bwrap creates a missing
	// mount point through whatever a path holds (creat truncates a file
	// there, through a link planted by a concurrent sandbox), and a
	// concurrent sandbox without this deny entry can write the workspace.
	// (bwrap's mounts also cost time in the square of their number: 1,000
	// masks took it 0.85 s; the init stage mounts 5,000 in about 80 ms.)
	//
	// For the same reason the files that read_only and read_write entries
	// name, where a sandbox can write their directory, are bound by the
	// init stage, by descriptor (a directory's mount point exists, so
	// bwrap creates nothing for it; the identity check catches a swap).
	for _, l := range p.Layers() {
		if g, ok := entryGrant(p, l.Path); ok && p.SandboxWritable(filepath.Dir(l.Path)) {
			if fi, err := os.Lstat(g.Path); err == nil && fi.Mode().IsRegular() {
				if o.InitBinds == nil {
					o.InitBinds = map[string]bool{}
				}
				o.InitBinds[l.Path] = true
			}
		}
	}
	if len(p.Masks) > 0 || len(o.InitBinds) > 0 {
		o.InitMasks = len(p.Masks) > 0
		o.InitCaps = []string{"CAP_SYS_ADMIN", "CAP_SETPCAP"}
		o.MapToRoot = uid != 0
	}
	return o
}

// entryGrant is the read_only or read_write entry's grant at path.
func entryGrant(p *policy.Policy, path string) (policy.Grant, bool) {
	for _, g := range p.Grants {
		if g.Path == path && strings.HasSuffix(g.Why, " entry") {
			return g, true
		}
	}
	return policy.Grant{}, false
}

// initFor is the init stage's config for a bwrap launch of p.
func initFor(p *policy.Policy, o argv.Options, path string, command, env []string) *sandboxinit.Config {
	cfg := &sandboxinit.Config{
		Profile: p.Profile,
		Path:    path,
		Args:    command,
		Env:     env,
		Dir:     o.Chdir,
		Network: commandNetwork(p),
		Check:   sandboxinit.LayerCheck{Filters: 1},
	}
	if o.InitMasks {
		cfg.Masks = p.Masks
	}
	for _, l := range p.Layers() {
		if o.InitBinds[l.Path] {
			dev, ino, _ := resolve.FileID(l.Path)
			cfg.Binds = append(cfg.Binds, sandboxinit.Bind{Path: l.Path, ReadOnly: l.Access != policy.Write, Dev: dev, Ino: ino})
		}
	}
	for _, m := range p.Masks {
		cfg.Check.Masked = append(cfg.Check.Masked, m.Path)
	}
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
		cfg.Check.Identity = append(cfg.Check.Identity, sandboxinit.PathID{Path: l.Path, Dev: dev, Ino: ino})
	}
	return cfg
}

func encodeInit(cfg *sandboxinit.Config) ([]byte, error) {
	return json.Marshal(cfg)
}
