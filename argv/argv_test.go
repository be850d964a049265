package argv

import (
	"fmt"
	"slices"
	"testing"

	"grok-sandbox/launcher/policy"
)

func opts() Options {
	return Options{Bwrap: "bwrap", Chdir: "/w", SeccompFD: 10, Init: []string{"/proc/self/fd/12", "__sandbox-init", "11"}}
}

// shape builds a policy with grants grants and masks masks, each in a
// directory of its own.
func shape(grants, masks int) *policy.Policy {
	p := &policy.Policy{ReadAll: true, Workspace: "/w", Grants: []policy.Grant{{Path: "/w", Access: policy.Write}}}
	for i := 0; i < grants; i++ {
		p.Grants = append(p.Grants, policy.Grant{Path: fmt.Sprintf("/w/g%d", i), Access: policy.Read})
	}
	for i := 0; i < masks; i++ {
		p.Masks = append(p.Masks, policy.Mask{Path: fmt.Sprintf("/w/m%d/x.key", i)})
		p.Pinned = append(p.Pinned, fmt.Sprintf("/w/m%d", i))
	}
	return p
}

// Whatever the shape, the command bwrap execs is the init stage and only
// that, after the one "--"; no option is "--"; the filter is always there;
// the kernel-facing protections come after every grant.
func TestRenderBoundaryInEveryShape(t *testing.T) {
	for _, tc := range []struct{ grants, masks int }{
		{0, 0}, {1, 1}, {90, 0}, {0, 80}, {85, 85}, {300, 0}, {0, 199}, {0, 200}, {0, 250},
	} {
		t.Run(fmt.Sprintf("grants%d-masks%d", tc.grants, tc.masks), func(t *testing.T) {
			p := shape(tc.grants, tc.masks)
			o := opts()
			o.InitMasks = len(p.Masks) > 200
			l := Render(p, o)
			if !slices.Equal(l.Command, o.Init) {
				t.Fatalf("command %q, want the init stage %q", l.Command, o.Init)
			}
			a := l.Argv()
			if got := a[len(a)-len(o.Init)-1:]; got[0] != "--" || !slices.Equal(got[1:], o.Init) {
				t.Fatalf("argv ends with %q", got)
			}
			if slices.Contains(l.Options, "--") {
				t.Fatalf("an option is \"--\"")
			}
			i := slices.Index(l.Options, "--seccomp")
			if i < 0 || l.Options[i+1] != "10" {
				t.Fatalf("no --seccomp 10 in the options")
			}
			lastGrant, proc := -1, slices.Index(l.Options, "--proc")
			for j, a := range l.Options {
				if (a == "--bind" || a == "--ro-bind") && l.Options[j+1] != "/sys" {
					lastGrant = j
				}
			}
			if proc < lastGrant {
				t.Errorf("--proc at %d comes before a grant at %d", proc, lastGrant)
			}
			if j := slices.Index(l.Options, "--remount-ro"); j < 0 || l.Options[j+1] != "/proc" {
				t.Errorf("/proc is not remounted read-only")
			}
			if slices.Contains(l.Options, "--ro-bind-data") || slices.Contains(l.Options, "--tmpfs") {
				t.Errorf("bwrap mounts masks; the init stage must")
			}
		})
	}
}

// A writable grant of / leaves /sys and /proc read-only: the protections
// are rendered after it.
func TestRenderKernelInterfacesAfterRootGrant(t *testing.T) {
	p := &policy.Policy{Grants: []policy.Grant{{Path: "/", Access: policy.Write}}}
	l := Render(p, opts())
	bindRoot := slices.Index(l.Options, "--bind")
	sys := -1
	for j, a := range l.Options {
		if a == "--ro-bind" && l.Options[j+1] == "/sys" {
			sys = j
		}
	}
	if bindRoot < 0 || sys < bindRoot {
		t.Fatalf("/sys (%d) is not bound read-only after the writable / (%d): %q", sys, bindRoot, l.Options)
	}
}

// A staged layer is never bound at its own path: bwrap binds it on the
// fresh /dev after everything else, and Moves tells the init stage where
// each went, parents first. Its descendants are staged with it, or its
// move would cover them. A read-only one is not bwrap's at all: the init
// stage makes it read-only in place (the layer above shows it there).
func TestRenderStagedLayers(t *testing.T) {
	p := &policy.Policy{ReadAll: true, Workspace: "/w", Grants: []policy.Grant{
		{Path: "/w", Access: policy.Write},
		{Path: "/w/.git/hooks", Access: policy.Read},
		{Path: "/w/.git/hooks/sub", Access: policy.Write},
		{Path: "/opt", Access: policy.Read},
	}}
	o := opts()
	o.Staged = map[string]bool{"/w/.git/hooks": true}
	l := Render(p, o)
	want := []Move{
		{Path: "/w/.git/hooks", ReadOnly: true, InPlace: true},
		{Path: "/w/.git/hooks/sub", Stage: StageDir + "/0", ReadOnly: false},
	}
	if !slices.Equal(l.Moves, want) {
		t.Fatalf("moves %v, want %v", l.Moves, want)
	}
	sys := slices.Index(l.Options, "/sys")
	for _, m := range l.Moves {
		for j, a := range l.Options {
			if (a == "--bind" || a == "--ro-bind") && (l.Options[j+2] == m.Path || l.Options[j+1] == m.Path && m.InPlace) {
				t.Errorf("%s is bound by bwrap: %q", m.Path, l.Options)
			}
		}
		if m.InPlace {
			continue
		}
		j := slices.Index(l.Options, m.Stage)
		if j < 0 || l.Options[j-1] != m.Path {
			t.Fatalf("%s is not bound at %s: %q", m.Path, m.Stage, l.Options)
		}
		if j < sys {
			t.Errorf("%s is staged before the kernel-facing mounts", m.Path)
		}
		if flag := l.Options[j-2]; (flag == "--ro-bind") != m.ReadOnly {
			t.Errorf("%s staged with %s", m.Path, flag)
		}
	}
	for _, own := range []string{"/w", "/opt"} {
		j := slices.Index(l.Options, own)
		if j < 0 || l.Options[j+1] != own {
			t.Errorf("%s is not bound at its own path", own)
		}
	}
}
