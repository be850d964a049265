package launcher

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"grok-sandbox/launcher/resolve"
)

// ProbeHost reads the facts about this machine that resolution takes as
// given (resolve.Host): the platform, the current directory, which system
// paths strict could expose and what their links say, where resolv.conf
// leads, and the top-level directories devbox writes. It reads; it never
// refuses: what is missing is refused by the step that needs it, so that a
// profile that needs nothing of it (off) still runs.
func ProbeHost() resolve.Host {
	h := resolve.Host{OS: runtime.GOOS}
	h.Cwd, h.CwdErr = os.Getwd()
	for _, d := range resolve.LinuxSystemPaths {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			sp := resolve.SystemPath{Path: d}
			sp.Link, sp.LinkErr = os.Readlink(d)
			if c, err := filepath.EvalSymlinks(d); err == nil {
				sp.Target = c
			}
			h.SystemPaths = append(h.SystemPaths, sp)
		case fi.IsDir():
			h.SystemPaths = append(h.SystemPaths, resolve.SystemPath{Path: d})
		}
	}
	if c, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		h.ResolvConf = c
	}
	entries, err := os.ReadDir("/")
	h.RootErr = err
	for _, e := range entries {
		if e.IsDir() {
			h.RootDirs = append(h.RootDirs, "/"+e.Name())
		}
	}
	return h
}

// hostBackends is what the host offers to enforce a policy with: bubblewrap
// (found and probed) and the Landlock ABI. Backend selection reads them
// here, after resolution, which needs neither; tests replace them.
var hostBackends = struct {
	bwrap       func(grokHome string, useCache, remember bool) Bubblewrap
	landlockABI func() int
}{FindBwrap, LandlockABI}
