package resolve

// What each built-in profile enforces: its grants (baseGrants), whether it
// protects hooks, and its child-network rule. The profiles' names are
// config's; how a grant is spelled for the target's kernel is target.go's.

import (
	"fmt"
	"sort"
	"strings"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/policy"
)

// LinuxSystemPaths is what strict exposes read-only on Linux so that programs
// run: binaries, the dynamic loader and libraries, and /etc. Where the host
// has merged /usr, /bin and friends are symlinks and stay symlinks. Which of
// them a host has, and what the links say, is the Host's (SystemPaths).
var LinuxSystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// darwinSystemPaths is what strict exposes read-only on macOS: the system
// volume, the Unix tree, configuration, and developer tools.
var darwinSystemPaths = []string{
	"/System", "/usr", "/bin", "/sbin", "/private/etc", "/Library/Apple",
	"/Library/Developer/CommandLineTools", "/Applications/Xcode.app/Contents/Developer",
	"/private/var/db/timezone", "/private/var/select", "/dev",
}

// devboxExcluded are the top-level directories devbox does not make
// writable: /data by definition, and the virtual file systems.
var devboxExcluded = map[string]bool{"/data": true, "/proc": true, "/sys": true, "/dev": true}

// baseGrants fills in the built-in profile's read and write rules.
func baseGrants(p *policy.Policy, t target, h Host) error {
	src := "built-in " + p.Base
	grant := func(path string, acc policy.Access, why string) {
		p.Grants = append(p.Grants, policy.Grant{Path: path, Access: acc, Why: why, Source: src})
	}
	temps := func() {
		for _, d := range t.tempDirs() {
			if c, err := t.canonical(d); err == nil {
				grant(c, policy.Write, "temporary directory")
			}
		}
	}
	switch p.Base {
	case config.Workspace:
		p.ReadAll = true
		grant(p.Workspace, policy.Write, "workspace")
		grant(p.GrokHome, policy.Write, "GROK_HOME")
		temps()
	case config.ReadOnly:
		p.ReadAll = true
		grant(p.GrokHome, policy.Write, "GROK_HOME")
		temps()
		// A workspace inside a temporary directory (or GROK_HOME) would
		// be writable through that grant: read-only means it is not.
		for _, g := range p.Grants {
			if g.Access == policy.Write && policy.Within(p.Workspace, g.Path) {
				grant(p.Workspace, policy.Read, "workspace (read-only, inside the writable "+g.Why+")")
				break
			}
		}
	case config.Strict:
		if err := systemPaths(p, t, h, grant); err != nil {
			return err
		}
		grant(p.Workspace, policy.Write, "workspace")
		grant(p.GrokHome, policy.Write, "GROK_HOME")
		temps()
	case config.Devbox:
		p.ReadAll = true
		if h.RootErr != nil {
			return Refuse("devbox: cannot list /: %v", h.RootErr)
		}
		for _, path := range h.RootDirs {
			if devboxExcluded[path] {
				continue
			}
			grant(t.path(path), policy.Write, "top-level directory")
		}
	default:
		return fmt.Errorf("no rules for built-in profile %q", p.Base)
	}
	policy.SortGrants(p.Grants)
	return nil
}

func systemPaths(p *policy.Policy, t target, h Host, grant func(string, policy.Access, string)) error {
	if t.os == "darwin" {
		for _, d := range darwinSystemPaths {
			grant(d, policy.Read, "system path")
		}
		return nil
	}
	for _, sp := range h.SystemPaths {
		d := sp.Path
		if sp.LinkErr != nil {
			return Refuse("strict: cannot read the link %s: %v", d, sp.LinkErr)
		}
		if sp.Link == "" {
			grant(d, policy.Read, "system path")
			continue
		}
		p.Links = append(p.Links, policy.Link{Path: d, Target: sp.Link})
		if c := sp.Target; c != "" && !strings.HasPrefix(c, "/usr/") && c != "/usr" {
			grant(c, policy.Read, "system path (target of "+d+")")
		}
	}
	// Name resolution for the wrapped command: /etc/resolv.conf often points
	// into /run, which strict does not otherwise expose.
	if c := h.ResolvConf; c != "" && !policy.Within(c, "/etc") && !policy.Within(c, "/usr") {
		grant(c, policy.Read, "name resolution (/etc/resolv.conf)")
	}
	sort.Slice(p.Links, func(i, j int) bool { return p.Links[i].Path < p.Links[j].Path })
	return nil
}

// hookProtected reports whether a built-in base applies global hook
// protection: every enforcing profile but devbox (meant for disposable VMs).
func hookProtected(base string) bool {
	return base == config.Workspace || base == config.ReadOnly || base == config.Strict
}

// restrictsNetwork is the built-in child-network rule.
func restrictsNetwork(base string) bool {
	return base == config.ReadOnly || base == config.Strict
}
