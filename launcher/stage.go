package launcher

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

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
	fdSeccomp = 10
	fdInit    = 11
)

// maxBwrapMasks is how many masks go on bwrap's command line; past this the
// init stage mounts them. bwrap rereads the whole mount table for every
// read-only bind, so its time grows with the square of the masks (measured
// with scripts/maskbench: 100 masks add 17 ms, 1,000 add 0.85 s), and it
// parses at most 9,000 arguments in all; the init stage mounts 5,000 in
// about 80 ms.
const maxBwrapMasks = 200

// initConfig is what the init stage reads from fdInit.
type initConfig struct {
	Profile  string
	GrokHome string
	Network  seccomp.Network
	// NoUserNS: refuse new user namespaces (every profile but devbox).
	NoUserNS bool
	// Masks the init stage mounts (when bwrap has no room for them).
	Masks    []policy.Mask
	MaskFile string
	MaskDir  string
}

// networkMode maps the policy's network rule to the seccomp rules that
// enforce it: isolation cuts everyone (the network namespace does the rest),
// child restriction needs a supervisor that tells the command from its
// children.
func networkMode(p *policy.Policy) seccomp.Network {
	switch {
	case p.Network.Isolate:
		return seccomp.NetworkDeny
	case p.Network.RestrictChildren:
		return seccomp.NetworkNotify
	}
	return seccomp.NetworkNone
}

// filterProgram is the seccomp program of a policy: terminal injection is
// always blocked, network per networkMode.
func filterProgram(p *policy.Policy) ([]bpf.RawInstruction, error) {
	arch, err := seccomp.HostArch()
	if err != nil {
		return nil, refuse("%v: terminal injection cannot be blocked here", err)
	}
	return seccomp.Build(filterRules(p), arch)
}

// filterRules: terminal injection is always blocked; user namespaces
// wherever the profile disables nested ones (bwrap's --disable-userns does
// it too; the filter also covers the init stage's path); network per
// networkMode.
func filterRules(p *policy.Policy) seccomp.Rules {
	return seccomp.Rules{BlockTerminalInjection: true, BlockUserNamespaces: !p.NestedUserNS, Network: networkMode(p)}
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

// selfPath is grok-sandbox's own executable, canonical, so that the init
// stage runs wherever it was installed.
func selfPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}

// initStage decides whether the launch needs grok-sandbox's own stage inside
// the sandbox, and fills in the options and the config for it. It may add a
// read grant for the executable when the profile does not expose it.
func (plan *Plan) initStage(opts *argv.Options) (*initConfig, error) {
	p := plan.Policy
	cfg := &initConfig{Profile: p.Profile, GrokHome: p.GrokHome, Network: networkMode(p), NoUserNS: !p.NestedUserNS}
	if len(p.Masks) > maxBwrapMasks {
		cfg.Masks, cfg.MaskFile, cfg.MaskDir = p.Masks, opts.MaskFile, opts.MaskDir
		opts.InitMasks = true
		opts.InitCaps = []string{"CAP_SYS_ADMIN", "CAP_SETPCAP"}
		opts.MapToRoot = os.Getuid() != 0
	}
	if cfg.Network != seccomp.NetworkNotify && len(cfg.Masks) == 0 {
		opts.SeccompFD = fdSeccomp
		return nil, nil
	}
	self, err := exposeSelf(p)
	if err != nil {
		return nil, err
	}
	opts.Init = []string{self, InitCommand, strconv.Itoa(fdInit), "--"}
	return cfg, nil
}

// needsInit reports whether a bwrap launch of p goes through the init stage.
func needsInit(p *policy.Policy) bool {
	return networkMode(p) == seccomp.NetworkNotify || len(p.Masks) > maxBwrapMasks
}

// exposeSelf makes sure the sandbox can run grok-sandbox's own executable
// for the init stage, adding a read grant for that one file when the profile
// does not expose it (strict, with the binary under home).
func exposeSelf(p *policy.Policy) (string, error) {
	self, err := selfPath()
	if err != nil {
		return "", refuse("cannot find grok-sandbox's own executable for the sandbox's init stage: %v", err)
	}
	if !p.Exposed(self) {
		p.Grants = append(p.Grants, policy.Grant{Path: self, Access: policy.Read,
			Why: "grok-sandbox's init stage", Source: "launcher"})
		policy.SortGrants(p.Grants)
	}
	return self, nil
}

func encodeInit(cfg *initConfig) ([]byte, error) {
	return json.Marshal(cfg)
}
