package resolve

import (
	"path/filepath"
	"slices"

	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/policy"
)

// target knows the file-system facts of the platform a policy is for. When it
// is the host's (Host.OS), paths are canonicalised against the real file
// system; a foreign target (print --target darwin on Linux) can only apply
// that platform's fixed rules.
type target struct {
	os      string
	host    bool
	environ []string
}

func targetFor(name, hostOS string, environ []string) target {
	return target{os: name, host: name == hostOS, environ: environ}
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
