package resolve

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/policy"
)

// target knows the file-system facts of the platform a policy is for. When it
// is the host, paths are canonicalised against the real file system; a
// foreign target (print --target darwin on Linux) can only apply that
// platform's fixed rules.
type target struct {
	os      string
	host    bool
	environ []string
}

func targetFor(name string, environ []string) target {
	return target{os: name, host: name == runtime.GOOS, environ: environ}
}

// canonical resolves symlinks in an absolute path that must exist.
func (t target) canonical(path string) (string, error) {
	if !t.host {
		return t.path(path), nil
	}
	c, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return t.path(c), nil
}

// darwinLinks are the top-level symlinks of macOS: a Seatbelt rule on the
// unresolved spelling never matches, because the kernel sees /private/....
var darwinLinks = []string{"/tmp", "/var", "/etc"}

// path spells an already canonical host path the way the target's kernel
// sees it.
func (t target) path(p string) string {
	if t.os != "darwin" {
		return p
	}
	for _, l := range darwinLinks {
		if policy.Within(p, l) {
			return "/private" + p
		}
	}
	return p
}

// linuxSystemPaths is what strict exposes read-only on Linux so that programs
// run: binaries, the dynamic loader and libraries, and /etc. Where the host
// has merged /usr, /bin and friends are symlinks and stay symlinks.
var linuxSystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// darwinSystemPaths is what strict exposes read-only on macOS: the system
// volume, the Unix tree, configuration, and developer tools.
var darwinSystemPaths = []string{
	"/System", "/usr", "/bin", "/sbin", "/private/etc", "/Library/Apple",
	"/Library/Developer/CommandLineTools", "/Applications/Xcode.app/Contents/Developer",
	"/private/var/db/timezone", "/private/var/select", "/dev",
}

func (t target) tempDirs() []string {
	if t.os != "darwin" {
		return []string{"/tmp", "/var/tmp"}
	}
	dirs := []string{"/private/tmp", "/private/var/tmp"}
	if tmp := envpolicy.Getenv(t.environ, "TMPDIR"); tmp != "" && filepath.IsAbs(tmp) {
		c := filepath.Clean(tmp)
		if t.host {
			if r, err := filepath.EvalSymlinks(c); err == nil {
				c = r
			}
		}
		c = t.path(c)
		if policy.Within(c, "/private/var/folders") && !slices.Contains(dirs, c) {
			dirs = append(dirs, c)
		}
	}
	return dirs
}

// devboxExcluded are the top-level directories devbox does not make
// writable: /data by definition, and the virtual file systems.
var devboxExcluded = map[string]bool{"/data": true, "/proc": true, "/sys": true, "/dev": true}

// baseGrants fills in the built-in profile's read and write rules.
func baseGrants(p *policy.Policy, t target) error {
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
	case config.Strict:
		if err := systemPaths(p, t, grant); err != nil {
			return err
		}
		grant(p.Workspace, policy.Write, "workspace")
		grant(p.GrokHome, policy.Write, "GROK_HOME")
		temps()
	case config.Devbox:
		p.ReadAll = true
		entries, err := os.ReadDir("/")
		if err != nil {
			return Refuse("devbox: cannot list /: %v", err)
		}
		for _, e := range entries {
			path := "/" + e.Name()
			if devboxExcluded[path] || e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
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

func systemPaths(p *policy.Policy, t target, grant func(string, policy.Access, string)) error {
	if t.os == "darwin" {
		for _, d := range darwinSystemPaths {
			grant(d, policy.Read, "system path")
		}
		return nil
	}
	for _, d := range linuxSystemPaths {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			dest, err := os.Readlink(d)
			if err != nil {
				return Refuse("strict: cannot read the link %s: %v", d, err)
			}
			p.Links = append(p.Links, policy.Link{Path: d, Target: dest})
			if c, err := filepath.EvalSymlinks(d); err == nil && !strings.HasPrefix(c, "/usr/") && c != "/usr" {
				grant(c, policy.Read, "system path (target of "+d+")")
			}
			continue
		}
		if fi.IsDir() {
			grant(d, policy.Read, "system path")
		}
	}
	// Name resolution for the wrapped command: /etc/resolv.conf often points
	// into /run, which strict does not otherwise expose.
	if c, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !policy.Within(c, "/etc") && !policy.Within(c, "/usr") {
		grant(c, policy.Read, "name resolution (/etc/resolv.conf)")
	}
	sort.Slice(p.Links, func(i, j int) bool { return p.Links[i].Path < p.Links[j].Path })
	return nil
}
