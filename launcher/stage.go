package launcher

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"

	"grok-sandbox/argv"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/seccomp"
)

// InitCommand is the hidden first argument that runs grok-sandbox's own stage
// inside the sandbox (see RunInit).
const InitCommand = "__sandbox-init"

// The descriptors a launch hands to bwrap (and through it to the init
// stage). Fixed numbers keep print's output identical to what run execs.
const (
	// fdSeccomp holds the base filter; bwrap reads and closes it.
	fdSeccomp = 10
	// fdInit holds the init stage's config.
	fdInit = 11
	// fdSelf is grok-sandbox's own executable, opened by the launcher
	// from /proc/self/exe: bwrap execs /proc/self/fd/12, so the init stage
	// is the very binary that was launched, wherever it lives and whatever
	// the profile shows, and nobody can swap it on the way.
	fdSelf = 12
	// fdEvents is the event log, opened before the sandbox starts, for the
	// violations the supervisor records.
	fdEvents = 13
	// fdMaskBase is the first of one /dev/null descriptor per file mask
	// that bwrap makes (--ro-bind-data copies it).
	fdMaskBase = 20
)

// maxBwrapMasks is how many masks go on bwrap's command line; past this the
// init stage mounts them. bwrap rereads the whole mount table for every
// mount, so its time grows with the square of the masks (measured with
// scripts/maskbench: 100 masks add 17 ms, 1,000 add 0.85 s), and every file
// mask costs bwrap a descriptor; the init stage mounts 5,000 in about 80 ms.
const maxBwrapMasks = 200

// initConfig is what the init stage reads from fdInit: the command and
// every layer it must find in force before it starts it.
type initConfig struct {
	Profile string `json:"profile"`
	// Path is the command's executable, resolved once on the host; Args
	// its argv, Args[0] as the user wrote it.
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Env is the command's environment, after the shell environment
	// policy. It travels here, not through bwrap's environment: bwrap and
	// the init stage run with an empty one, so nothing a config file sets
	// (LD_PRELOAD, say) reaches a program that runs outside the sandbox.
	Env []string `json:"env"`
	// Dir is the directory the command starts in. bwrap enters it before
	// the init stage mounts its masks, so the init stage enters it again
	// by path after mounting: a mask over the directory (or above it) then
	// applies to the command's working directory too.
	Dir string `json:"dir"`
	// Network is the rule of the command's own filter, on top of the base
	// filter bwrap installed.
	Network seccomp.Network `json:"network"`
	// Masks the init stage mounts (when bwrap has no room for them).
	Masks []policy.Mask `json:"init_masks,omitempty"`
	// Check is what the init stage verifies before the command starts.
	Check layerCheck `json:"check"`
}

// layerCheck is what must be in force inside the sandbox, read back from
// the kernel before the command starts: a launch that lost a layer on the
// way (an option bwrap never parsed, a mount that did not happen) is refused
// instead of run.
type layerCheck struct {
	// Filters is how many seccomp filters the init stage must carry
	// (bwrap's base filter).
	Filters int `json:"filters"`
	// Masked are paths that must be unreadable (mode 0000) and read-only.
	Masked []string `json:"masked,omitempty"`
	// ReadOnly are paths that must be on read-only mounts: the protected
	// paths and the kernel interfaces.
	ReadOnly []string `json:"read_only,omitempty"`
}

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
		return nil, refuse("%v: terminal injection cannot be blocked here", err)
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
		SeccompFD: fdSeccomp,
		// The profile rides on pid 1's command line, which nothing in the
		// sandbox can change (see Status).
		Init:       []string{"/proc/self/fd/" + strconv.Itoa(fdSelf), InitCommand, strconv.Itoa(fdInit), p.Profile},
		MaskFDBase: fdMaskBase,
	}
	if len(p.Masks) > maxBwrapMasks {
		o.InitMasks = true
		o.InitCaps = []string{"CAP_SYS_ADMIN", "CAP_SETPCAP"}
		o.MapToRoot = uid != 0
	}
	return o
}

// initFor is the init stage's config for a bwrap launch of p.
func initFor(p *policy.Policy, o argv.Options, path string, command, env []string) *initConfig {
	cfg := &initConfig{
		Profile: p.Profile,
		Path:    path,
		Args:    command,
		Env:     env,
		Dir:     o.Chdir,
		Network: commandNetwork(p),
		Check:   layerCheck{Filters: 1},
	}
	if o.InitMasks {
		cfg.Masks = p.Masks
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
	return cfg
}

func encodeInit(cfg *initConfig) ([]byte, error) {
	return json.Marshal(cfg)
}

// shown is the config as print shows it: the environment's names only,
// since values can be secrets.
func (cfg initConfig) shown() initConfig {
	env := make([]string, len(cfg.Env))
	for i, kv := range cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		env[i] = k + "=(value not shown)"
	}
	cfg.Env = env
	return cfg
}
