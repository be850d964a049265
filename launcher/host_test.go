package launcher

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"grok-sandbox/launcher/resolve"
)

// ProbeHost reports this machine as it is: every system path it has, as a
// directory or as the link it is, and nothing it lacks; where resolv.conf
// leads; the current directory; the top-level directories, without links.
func TestProbeHostReadsThisHost(t *testing.T) {
	h := ProbeHost()
	if h.OS != runtime.GOOS {
		t.Errorf("OS %q, want %q", h.OS, runtime.GOOS)
	}
	if wd, err := os.Getwd(); h.Cwd != wd || h.CwdErr != nil || err != nil {
		t.Errorf("Cwd %q (%v), want %q", h.Cwd, h.CwdErr, wd)
	}
	byPath := map[string]resolve.SystemPath{}
	for _, sp := range h.SystemPaths {
		byPath[sp.Path] = sp
	}
	for _, d := range resolve.LinuxSystemPaths {
		sp, probed := byPath[d]
		fi, err := os.Lstat(d)
		switch {
		case err != nil || (!fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0):
			if probed {
				t.Errorf("%s: probed as %+v, but the host has no directory or link there", d, sp)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(d)
			target, _ := filepath.EvalSymlinks(d)
			if !probed || sp.Link != link || sp.Target != target {
				t.Errorf("%s: probed as %+v, want the link %q to %q", d, sp, link, target)
			}
		default:
			if !probed || sp.Link != "" {
				t.Errorf("%s: probed as %+v, want a directory", d, sp)
			}
		}
	}
	if c, _ := filepath.EvalSymlinks("/etc/resolv.conf"); h.ResolvConf != c {
		t.Errorf("ResolvConf %q, want %q", h.ResolvConf, c)
	}
	for _, d := range h.RootDirs {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			t.Errorf("RootDirs has %s, which is no directory (%v)", d, err)
		}
	}
	if !slices.IsSorted(h.RootDirs) || h.RootErr != nil {
		t.Errorf("RootDirs %q (%v): want them sorted, and / listed", h.RootDirs, h.RootErr)
	}
}
