// Package policy defines the resolved sandbox policy: a plain value that says,
// with absolute canonical paths, what a sandboxed command may read and write,
// what is denied to it, which paths are hook-protected and what network it has.
//
// A Policy is built once by the launcher's resolver and rendered many ways (a
// bwrap argv, Seatbelt text, Landlock rules). It holds no platform mechanism:
// a renderer that needs a fact the policy lacks gets it added here, so that
// every backend enforces the same thing.
package policy

import (
	"path/filepath"
	"sort"
	"strings"
)

// Access is what a grant allows on a path and everything below it.
type Access uint8

const (
	// Hidden: not exposed at all (only meaningful when ReadAll is false).
	Hidden Access = iota
	// Read: readable, not writable, not deletable.
	Read
	// Write: readable and writable.
	Write
)

func (a Access) String() string {
	switch a {
	case Read:
		return "read-only"
	case Write:
		return "read-write"
	}
	return "hidden"
}

// Grant exposes Path (and everything below it, unless a deeper grant says
// otherwise) with the given access.
type Grant struct {
	Path   string
	Access Access
	// Why is the grant there ("workspace", "system path", "read_only entry", ...)
	// and Source where it came from ("built-in strict", "/home/u/.grok/sandbox.toml").
	Why    string
	Source string
}

// Link is a symbolic link that the sandbox's view of the file system must
// contain although its directory is not exposed (merged-/usr links such as
// /bin -> usr/bin under strict).
type Link struct {
	Path   string
	Target string
}

// DenyRule is one deny entry as the user wrote it, anchored: Prefix is the
// literal absolute directory it starts at and Rest the glob below it ("" for
// an exact path). Renderers that can match at run time (Seatbelt) use the rule;
// renderers that cannot (bwrap) use Masks, its expansion at launch.
type DenyRule struct {
	Entry  string
	Prefix string
	Rest   string
	Source string
}

// Mask is one existing path that a deny rule matched at launch. Masks win over
// every grant: the path is neither readable nor writable.
type Mask struct {
	Path  string `json:"path"`
	Dir   bool   `json:"directory"`
	Entry string `json:"entry"`
	// Source is where the entry was written ("FILE:LINE").
	Source string `json:"source,omitempty"`
	// Dev and Ino identify the file found at launch: what is masked must
	// be that file, whatever a concurrent sandbox did to the path since.
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// Skipped is a deny match with nothing to mask: it does not exist, or the
// profile does not expose it at all.
type Skipped struct {
	Path   string
	Entry  string
	Reason string
}

// Network says who in the sandbox may use the network.
type Network struct {
	// RestrictChildren: processes started by the wrapped command get no
	// network; the wrapped command itself keeps it.
	RestrictChildren bool
	// Isolate: nobody in the sandbox has network, the wrapped command included.
	Isolate bool
	// AllowHosts are the endpoints the children may reach (through the
	// init stage's proxy) besides their private loopback.
	AllowHosts []HostRule `json:",omitempty"`
	// ForcedBy is FILE:LINE of the administrator's restrict_network when
	// it restricts children the profile itself would not.
	ForcedBy string `json:",omitempty"`
}

// Policy is the resolved capability set of one run.
type Policy struct {
	Profile string // the name asked for
	Base    string // the built-in profile it is (or extends)
	Source  string // where the profile is defined: "built-in" or a file path
	Target  string // "linux" or "darwin"
	// Enforce is false only for off: the command runs with no sandbox at all.
	Enforce bool
	// Requirements is the administrator's requirements file when there is
	// one (grok-sandbox help managed).
	Requirements string `json:",omitempty"`

	Workspace string
	Home      string
	GrokHome  string

	// ReadAll: the whole file system is readable except where a deny rule
	// says otherwise. When false, only Grants are visible.
	ReadAll bool
	Grants  []Grant
	Links   []Link

	Deny    []DenyRule
	Masks   []Mask
	Skipped []Skipped

	// Protected paths stay readable but are write-denied whatever grants
	// them (global hook protection). Pinned directories, their existing
	// parents, cannot be renamed, so a protected path cannot be moved away.
	Protected []string
	// GitDirs are the git directories the sandbox can write (the ones
	// whose hooks and config are protected): git outside follows a
	// symbolic link planted in one, so the init stage removes the ones a
	// run made (see launcher/sandboxinit).
	GitDirs []string
	Pinned  []string
	// ProtectedWhy says, for each protected path, what it is and why a
	// sandbox must not change it (shown by explain).
	ProtectedWhy map[string]string `json:",omitempty"`

	Network Network
	// Agent is the agent CLI the run wraps, when one was recognised or
	// named; nil otherwise.
	Agent *Agent `json:",omitempty"`
	// NestedUserNS: processes may create user namespaces (and with them
	// rearrange mounts). Only devbox allows it.
	NestedUserNS bool

	// Warnings collected while resolving, shown by run and explain.
	Warnings []string
}

// Agent is what the policy knows of the agent CLI it wraps.
type Agent struct {
	Name  string // "codex"; "" for a program named only by agent_executable
	Title string // "Codex CLI"
	// By says how it was chosen: "recognised from PATH", "--agent",
	// "FILE:LINE agent".
	By string
	// State are the agent's files and directories, granted writable.
	State []string
	// Program is the real agent when the command is its launcher: under
	// restrict_network the first process the command starts that executes
	// this file (device and inode) gets the command's network. "" when the
	// command itself is the agent.
	Program    string
	ProgramDev uint64
	ProgramIno uint64
	// ProgramBy says where Program came from.
	ProgramBy string
	// Env is set in the command's environment.
	Env map[string]string `json:",omitempty"`
	// Mirror is the copy of a state file the agent uses inside, and
	// MirrorOf the file it mirrors ("": none; see agents.Mirror).
	Mirror, MirrorOf string `json:",omitempty"`
}

// Within reports whether path is dir or below it.
func Within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// AccessAt is the access the policy gives to path before masks: the most
// specific grant covering it wins, read-only wins over read-write for the
// same path, and hook protection turns any write into read.
func (p *Policy) AccessAt(path string) Access {
	acc, depth := Hidden, -1
	if p.ReadAll {
		acc = Read
	}
	for _, g := range p.Grants {
		if !Within(path, g.Path) {
			continue
		}
		d := Depth(g.Path)
		switch {
		case d > depth:
			acc, depth = g.Access, d
		case d == depth && g.Access < acc:
			acc = g.Access
		}
	}
	if acc == Write && p.IsProtected(path) {
		acc = Read
	}
	return acc
}

// IsProtected reports whether path is a hook-protected path or below one.
func (p *Policy) IsProtected(path string) bool {
	for _, q := range p.Protected {
		if Within(path, q) {
			return true
		}
	}
	return false
}

// Depth is the number of components of a clean absolute path ("/" is 0).
func Depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// Layer is one place where the sandbox view changes access.
type Layer struct {
	Path   string
	Access Access
}

// Layers lists every grant and protected path, and every pinned directory
// that could otherwise be renamed, with the access it ends up with, parents
// before children. Applying them in this order, each covering what came
// before below it, gives the policy's view; masks go after all of them.
//
// Renaming a directory needs write access to its parent, so a pinned
// directory whose parent is not writable is already fixed in place and is
// left out.
func (p *Policy) Layers() []Layer {
	seen := map[string]bool{}
	var paths []string
	add := func(path string) {
		if !seen[path] {
			seen[path] = true
			paths = append(paths, path)
		}
	}
	for _, g := range p.Grants {
		add(g.Path)
	}
	for _, q := range p.Protected {
		add(q)
	}
	for _, d := range p.Pinned {
		if d != "/" && p.AccessAt(filepath.Dir(d)) == Write {
			add(d)
		}
	}
	SortPaths(paths)
	var out []Layer
	for _, path := range paths {
		if acc := p.AccessAt(path); acc != Hidden {
			out = append(out, Layer{Path: path, Access: acc})
		}
	}
	return out
}

// SortPaths orders paths parents first, then by name, so that a mount of a
// directory never covers one made earlier below it.
func SortPaths(paths []string) {
	sort.Slice(paths, func(i, j int) bool { return shallowFirst(paths[i], paths[j]) })
}

func shallowFirst(a, b string) bool {
	if da, db := Depth(a), Depth(b); da != db {
		return da < db
	}
	return a < b
}

// SandboxWritable reports whether some sandbox can write dir: this
// profile's writable paths, and the workspace, GROK_HOME and the temporary
// directories, which every enforcing profile but read-only writes. A link
// in such a directory is a sandbox's to change.
func (p *Policy) SandboxWritable(dir string) bool {
	if p.AccessAt(dir) == Write {
		return true
	}
	for _, w := range []string{p.Workspace, p.GrokHome, "/tmp", "/var/tmp"} {
		if Within(dir, w) {
			return true
		}
	}
	return false
}

// Exposed reports whether path is visible at all under the policy.
func (p *Policy) Exposed(path string) bool {
	return p.AccessAt(filepath.Clean(path)) != Hidden
}

// SortGrants orders grants parents first, then by path.
func SortGrants(gs []Grant) {
	sort.SliceStable(gs, func(i, j int) bool { return shallowFirst(gs[i].Path, gs[j].Path) })
}
