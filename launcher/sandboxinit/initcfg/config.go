// Package initcfg is what the launcher and the init stage agree on: the
// Config the launcher writes to FDInit and pid 1 (launcher/sandboxinit)
// reads, the descriptor numbers a launch hands to bwrap and through it to
// pid 1, the hidden argument that runs the init stage (Command), and
// grok-sandbox's own exit statuses. It holds data only (and the checks of
// it both sides make), and builds on every platform (print and explain show the config everywhere).
package initcfg

import (
	"strings"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/seccomp"
)

// Exit statuses of grok-sandbox itself (grok-sandbox help commands: "Exit status"); a command that runs passes
// its own status through.
const (
	ExitRefused       = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// Command is the hidden first argument that runs grok-sandbox's own stage
// inside the sandbox (sandboxinit.Run).
const Command = "__sandbox-init"

// ChildNetArg follows the profile on the init stage's command line when
// the config asks for the children's private loopback (Config.ChildNet):
// the init stage starts making their network namespace before it reads
// the config.
const ChildNetArg = "--child-net"

// AsUserArg follows (the profile and ChildNetArg) when the command runs as
// the user through a starter (Config.User): the init stage starts the
// starter before it reads the config.
const AsUserArg = "--as-user"

// The descriptors a launch hands to bwrap (and through it to the init
// stage). Fixed numbers keep print's output identical to what run execs.
const (
	// FDSeccomp holds the base filter; bwrap reads and closes it.
	FDSeccomp = 10
	// FDInit holds the init stage's config.
	FDInit = 11
	// FDSelf is the init stage's executable, opened by the launcher:
	// grok-sandbox-init of the same build where it lies beside the
	// launcher (launcher/initbin), else grok-sandbox's own, from
	// /proc/self/exe. bwrap execs /proc/self/fd/12, so the init stage is
	// an executable the launcher checked, wherever it lives and whatever
	// the profile shows, and nobody can swap it on the way.
	FDSelf = 12
	// FDEvents is the event log, opened before the sandbox starts, for the
	// violations the supervisor records.
	FDEvents = 13
	// FDNetHelper is the init stage's end of its channel to the net
	// helper (launcher/sandboxinit/childnet), kept across its re-exec.
	FDNetHelper = 14
	// FDFuse is /dev/fuse, opened O_PATH by the launcher where the user
	// may open it: the init stage reopens it inside the sandbox's user
	// namespace for the mask observer (launcher/sandboxinit/maskfs).
	FDFuse = 15
	// FDObserver is the init stage's end of its channel to the mask
	// observer, kept across its re-exec.
	FDObserver = 16
	// FDStarter is the init stage's end of its channel to the command's
	// starter (launcher/sandboxinit/starter), kept across its re-exec.
	FDStarter = 17
)

// Config is what the init stage reads from FDInit: the command and
// every layer it must find in force before it starts it.
type Config struct {
	Profile string `json:"profile"`
	// Path is the command's executable, resolved once on the host; Args
	// its argv, Args[0] as the user wrote it.
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Env is the command's environment, after the shell environment
	// policy. It travels here, not through bwrap's environment: bwrap and
	// the init stage run with an empty one (TZ set empty only), so nothing a config file sets
	// (LD_PRELOAD, say) reaches a program that runs outside the sandbox.
	Env []string `json:"env"`
	// Dir is the directory the command starts in. bwrap enters it before
	// the init stage mounts its masks, so the init stage enters it again
	// by path after mounting: a mask over the directory (or above it) then
	// applies to the command's working directory too.
	Dir string `json:"dir"`
	// Ignored are the signals the launcher's caller ignored (nohup's
	// SIGHUP, the SIGINT of a script's background job; see IgnoredBy),
	// which the command starts ignoring too. Every other signal starts at
	// its default.
	Ignored []int `json:"ignored_signals,omitempty"`
	// Network is the rule of the command's own filter, on top of the base
	// filter bwrap installed.
	Network seccomp.Network `json:"network"`
	// Agent is the real agent's program when the command is only its
	// launcher: under the notifying rule, the first process the command
	// itself starts that executes this very file (device and inode) gets
	// the command's network, and no other process ever does.
	Agent *PathID `json:"agent_program,omitempty"`
	// ChildNet gives the command's children a private loopback under the
	// notifying rule: their IP sockets are made in a network namespace of
	// their own (see launcher/sandboxinit/childnet). The init stage then needs
	// CAP_SYS_ADMIN and CAP_NET_ADMIN in the sandbox, which it drops
	// before the command starts.
	ChildNet bool `json:"child_loopback,omitempty"`
	// Isolated: under the notifying rule nobody is exempt, the command
	// included (isolate_network): everyone gets the private loopback only.
	Isolated bool `json:"isolated,omitempty"`
	// AllowHosts are the endpoints the children reach through the init
	// stage's proxy (with ChildNet only; see launcher/sandboxinit/proxy).
	AllowHosts []policy.HostRule `json:"allow_hosts,omitempty"`
	// GitDirs are the git directories the sandbox can write: once the
	// command has exited and nothing of the sandbox runs any more, every
	// symbolic link made in one during the run is removed (git outside
	// would follow it, writing where it points).
	GitDirs []string `json:"git_dirs,omitempty"`
	// Masks the init stage mounts (all of them: bwrap mounts none).
	Masks []policy.Mask `json:"init_masks,omitempty"`
	// Binds are the staged layers: bwrap bound each at its Stage, on the
	// fresh /dev, and the init stage moves it onto its path, parents first
	// (layers whose mount point a sandbox could swap; see argv.Staged).
	Binds []Bind `json:"init_binds,omitempty"`
	// Observe says how touches of denied and protected paths are
	// observed and logged (nil: they are not; see launcher/sandboxinit/maskfs
	// and launcher/sandboxinit/pathwatch).
	Observe *Observe `json:"observe,omitempty"`
	// User, when set, is who the command runs as: the init stage runs as
	// uid 0 of the sandbox's user namespace (to mount), and starts the
	// command in a user namespace nested in it that maps User's uid and
	// gid onto that 0 (see launcher/sandboxinit/starter). Nil: the command runs as the
	// init stage does (root as root; bwrap's own mapping otherwise).
	User *User `json:"user,omitempty"`
	// Check is what the init stage verifies before the command starts.
	Check LayerCheck `json:"check"`
}

// User is the identity the command runs as, in a user namespace of its own.
type User struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// BlockUserNamespaces: the command's filter refuses any further user
	// namespace (the base filter could not: the init stage makes this
	// one).
	BlockUserNamespaces bool `json:"block_user_namespaces"`
}

// Observe is the file violation observer's part of the config.
type Observe struct {
	// Fuse: the launcher handed over /dev/fuse, and the masks' sources are
	// nodes the mask observer serves, so every touch of a mask is seen.
	Fuse bool `json:"fuse"`
	// Paths: renames, removals and links of the masks, and writes to
	// Protected, are seen by a seccomp filter on the command.
	Paths bool `json:"paths"`
	// Protected are the paths whose writes are violations: hook-protected
	// paths and control files.
	Protected []Watched `json:"protected,omitempty"`
}

// Watched is a protected path and what protects it.
type Watched struct {
	Path   string `json:"path"`
	Entry  string `json:"entry"`
	Source string `json:"source,omitempty"`
}

// LayerCheck is what must be in force inside the sandbox, read back from
// the kernel before the command starts: a launch that lost a layer on the
// way (an option bwrap never parsed, a mount that did not happen) is refused
// instead of run.
type LayerCheck struct {
	// Filters is how many seccomp filters the init stage must carry
	// (bwrap's base filter).
	Filters int `json:"filters"`
	// Masked are paths that must be unreadable (mode 0000) and read-only.
	Masked []string `json:"masked,omitempty"`
	// ReadOnly are paths that must be on read-only mounts: the protected
	// paths and the kernel interfaces.
	ReadOnly []string `json:"read_only,omitempty"`
	// Identity are the files and directories bwrap mounted grants, pins
	// and protected paths on, as the launcher found them: each path must
	// reach, with no link on the way, that very file. bwrap mounts by path,
	// and a concurrent sandbox that may write a grant's parent could swap
	// it for a link meanwhile (and get another directory bound there).
	Identity []PathID `json:"identity,omitempty"`
}

// Bind is a staged layer: the mount bwrap made at Stage, which the init
// stage moves onto Path, by descriptor, when both are still the file found
// at launch. An InPlace one has no Stage: the init stage binds the file the
// sandbox shows at Path (when it is the one found at launch) onto itself,
// read-only.
type Bind struct {
	Path     string `json:"path"`
	Stage    string `json:"stage,omitempty"`
	ReadOnly bool   `json:"read_only"`
	InPlace  bool   `json:"in_place,omitempty"`
	Dev      uint64 `json:"dev"`
	Ino      uint64 `json:"ino"`
}

// PathID is a path and the file it named at launch.
type PathID struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Shown is the config as print shows it: the environment's names only,
// since values can be secrets.
func (cfg Config) Shown() Config {
	env := make([]string, len(cfg.Env))
	for i, kv := range cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		env[i] = k + "=(value not shown)"
	}
	cfg.Env = env
	return cfg
}
