package resolve

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/policy"
)

// Paths under a root no test machine has: hook protection finds nothing
// there, and a dry run creates nothing.
const (
	fakeHome = "/nonexistent-grok-sandbox-test/home/u"
	fakeWS   = fakeHome + "/ws"
	fakeGrok = fakeHome + "/.grok"
)

// fakeDirs is what LocateDirs would find for fakeHome, as a dry run.
func fakeDirs() Dirs {
	return Dirs{Home: fakeHome, GrokHome: fakeGrok, grokHomeAsGiven: fakeGrok,
		Workspace: fakeWS, Cwd: fakeWS, DryRun: true, wouldCreate: new([]string)}
}

// mergedUsr is a Debian-like host with a merged /usr and no multilib.
func mergedUsr() Host {
	return Host{
		OS:  "linux",
		Cwd: fakeWS,
		SystemPaths: []SystemPath{
			{Path: "/usr"},
			{Path: "/bin", Link: "usr/bin", Target: "/usr/bin"},
			{Path: "/sbin", Link: "usr/sbin", Target: "/usr/sbin"},
			{Path: "/lib", Link: "usr/lib", Target: "/usr/lib"},
			{Path: "/lib64", Link: "usr/lib64", Target: "/usr/lib64"},
			{Path: "/etc"},
		},
		ResolvConf: "/etc/resolv.conf",
		RootDirs:   []string{"/data", "/dev", "/etc", "/home", "/opt", "/proc", "/sys", "/tmp", "/usr", "/var"},
	}
}

// with is h changed by edit, leaving h's slices alone.
func with(h Host, edit func(*Host)) Host {
	h.SystemPaths = append([]SystemPath(nil), h.SystemPaths...)
	h.RootDirs = append([]string(nil), h.RootDirs...)
	edit(&h)
	return h
}

func resolveOn(t *testing.T, h Host, target, profile string) (*policy.Policy, error) {
	t.Helper()
	req := Request{Profile: profile, ProfileFrom: "--profile", Target: target, Environ: []string{"HOME=" + fakeHome}}
	cfg := &config.Config{Profiles: map[string]config.CustomProfile{}}
	return Resolve(req, h, fakeDirs(), cfg, Selection{Name: profile, By: "--profile"})
}

// grantsBy lists the grants whose Why starts with why, as "path access".
func grantsBy(p *policy.Policy, why string) []string {
	var out []string
	for _, g := range p.Grants {
		if strings.HasPrefix(g.Why, why) {
			out = append(out, g.Path+" "+g.Access.String())
		}
	}
	return out
}

// withoutGrant is p's grants less the one at path.
func withoutGrant(p *policy.Policy, path string) []policy.Grant {
	var out []policy.Grant
	for _, g := range p.Grants {
		if g.Path != path {
			out = append(out, g)
		}
	}
	return out
}

// What strict exposes of the system is the host's shape, and only that: a
// multilib directory adds its own grant, a link adds a link (and a grant
// only when it leads outside /usr), resolv.conf's target is granted only
// when it lies outside /etc and /usr. Everything else in the policy is the
// same whatever the host has.
func TestStrictSystemPathsFollowTheHost(t *testing.T) {
	base := mergedUsr()
	want, err := resolveOn(t, base, "linux", config.Strict)
	if err != nil {
		t.Fatal(err)
	}
	if got, exp := grantsBy(want, "system path"), []string{"/etc read-only", "/usr read-only"}; !reflect.DeepEqual(got, exp) {
		t.Fatalf("merged /usr: system grants %q, want %q", got, exp)
	}
	cases := []struct {
		name string
		host Host
		// extra is the one grant the host adds ("" for none), links the
		// links the policy then holds.
		extra, why string
		links      []string
	}{
		{"multilib /lib32 directory", with(base, func(h *Host) {
			h.SystemPaths = append(h.SystemPaths, SystemPath{Path: "/lib32"})
		}), "/lib32", "system path", []string{"/bin", "/lib", "/lib64", "/sbin"}},
		{"multilib /lib32 merged into /usr", with(base, func(h *Host) {
			h.SystemPaths = append(h.SystemPaths, SystemPath{Path: "/lib32", Link: "usr/lib32", Target: "/usr/lib32"})
		}), "", "", []string{"/bin", "/lib", "/lib32", "/lib64", "/sbin"}},
		{"a link leading outside /usr", with(base, func(h *Host) {
			h.SystemPaths = append(h.SystemPaths, SystemPath{Path: "/libx32", Link: "/opt/libx32", Target: "/opt/libx32"})
		}), "/opt/libx32", "system path (target of /libx32)", []string{"/bin", "/lib", "/lib64", "/libx32", "/sbin"}},
		{"a dangling link", with(base, func(h *Host) {
			h.SystemPaths = append(h.SystemPaths, SystemPath{Path: "/libx32", Link: "usr/libx32"})
		}), "", "", []string{"/bin", "/lib", "/lib64", "/libx32", "/sbin"}},
		{"resolv.conf in /run", with(base, func(h *Host) {
			h.ResolvConf = "/run/systemd/resolve/stub-resolv.conf"
		}), "/run/systemd/resolve/stub-resolv.conf", "name resolution (/etc/resolv.conf)", []string{"/bin", "/lib", "/lib64", "/sbin"}},
		{"resolv.conf in /usr", with(base, func(h *Host) {
			h.ResolvConf = "/usr/lib/resolv.conf"
		}), "", "", []string{"/bin", "/lib", "/lib64", "/sbin"}},
		{"resolv.conf elsewhere in /etc", with(base, func(h *Host) {
			h.ResolvConf = "/etc/resolvconf/run/resolv.conf"
		}), "", "", []string{"/bin", "/lib", "/lib64", "/sbin"}},
		{"no resolv.conf", with(base, func(h *Host) { h.ResolvConf = "" }),
			"", "", []string{"/bin", "/lib", "/lib64", "/sbin"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := resolveOn(t, c.host, "linux", config.Strict)
			if err != nil {
				t.Fatal(err)
			}
			var links []string
			for _, l := range got.Links {
				links = append(links, l.Path)
			}
			if !reflect.DeepEqual(links, c.links) {
				t.Errorf("links %q, want %q", links, c.links)
			}
			grants := got.Grants
			if c.extra != "" {
				g, ok := entryAt(got, c.extra)
				if !ok || g.Access != policy.Read || g.Why != c.why {
					t.Errorf("no read-only %q grant for %s: %+v", c.why, c.extra, got.Grants)
				}
				grants = withoutGrant(got, c.extra)
			}
			if !reflect.DeepEqual(grants, want.Grants) {
				t.Errorf("grants differ beyond %q:\n got  %+v\n want %+v", c.extra, grants, want.Grants)
			}
			got.Grants, got.Links = want.Grants, want.Links
			if !reflect.DeepEqual(got, want) {
				t.Errorf("policy differs beyond grants and links:\n got  %+v\n want %+v", got, want)
			}
		})
	}
}

func entryAt(p *policy.Policy, path string) (policy.Grant, bool) {
	for _, g := range p.Grants {
		if g.Path == path {
			return g, true
		}
	}
	return policy.Grant{}, false
}

// A policy for another platform takes nothing from the host's shape:
// strict for macOS, rendered on Linux, has macOS's fixed system paths
// whatever the Linux host has.
func TestForeignTargetIgnoresTheHost(t *testing.T) {
	multilib := with(mergedUsr(), func(h *Host) {
		h.SystemPaths = append(h.SystemPaths, SystemPath{Path: "/lib32"})
		h.ResolvConf = "/run/systemd/resolve/stub-resolv.conf"
	})
	var first *policy.Policy
	for _, h := range []Host{mergedUsr(), multilib, {OS: "linux", Cwd: fakeWS}} {
		p, err := resolveOn(t, h, "darwin", config.Strict)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Links) != 0 {
			t.Errorf("darwin policy has the host's links: %+v", p.Links)
		}
		if _, ok := entryAt(p, "/System"); !ok {
			t.Errorf("darwin policy lacks /System: %+v", p.Grants)
		}
		if first == nil {
			first = p
		} else if !reflect.DeepEqual(p, first) {
			t.Errorf("darwin policy depends on the host:\n got  %+v\n want %+v", p, first)
		}
	}
}

// devbox writes the host's top-level directories, never the kernel's file
// systems or /data, and refuses to guess when / cannot be listed.
func TestDevboxWritesTheHostsTopLevel(t *testing.T) {
	p, err := resolveOn(t, mergedUsr(), "linux", config.Devbox)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/etc read-write", "/home read-write", "/opt read-write", "/tmp read-write", "/usr read-write", "/var read-write"}
	if got := grantsBy(p, "top-level directory"); !reflect.DeepEqual(got, want) {
		t.Errorf("devbox grants %q, want %q", got, want)
	}
	unlisted := with(mergedUsr(), func(h *Host) { h.RootErr = errors.New("permission denied") })
	if _, err := resolveOn(t, unlisted, "linux", config.Devbox); err == nil || !strings.Contains(err.Error(), "devbox: cannot list /: permission denied") {
		t.Errorf("devbox with / unlisted: %v; want a refusal", err)
	}
	// Only devbox needs the listing.
	if _, err := resolveOn(t, unlisted, "linux", config.Strict); err != nil {
		t.Errorf("strict with / unlisted: %v", err)
	}
}

// What the probe could not read is refused by the profile that needs it,
// and only by it: off runs anywhere.
func TestHostGapsRefuseOnlyWhereNeeded(t *testing.T) {
	broken := with(mergedUsr(), func(h *Host) {
		h.SystemPaths[1].LinkErr = errors.New("input/output error")
	})
	if _, err := resolveOn(t, broken, "linux", config.Strict); err == nil || !strings.Contains(err.Error(), "strict: cannot read the link /bin") {
		t.Errorf("strict with an unreadable /bin: %v; want a refusal", err)
	}
	for _, profile := range []string{config.Off, config.Workspace, config.ReadOnly, config.Devbox} {
		if _, err := resolveOn(t, broken, "linux", profile); err != nil {
			t.Errorf("%s with an unreadable /bin: %v", profile, err)
		}
	}
	noCwd := Host{OS: "linux", CwdErr: errors.New("no such file or directory")}
	_, err := LocateDirs(Request{Environ: []string{"HOME=/"}}, noCwd)
	if err == nil || !strings.Contains(err.Error(), "cannot find the current directory: no such file or directory") {
		t.Errorf("LocateDirs without a current directory: %v; want a refusal", err)
	}
}
