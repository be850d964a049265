package launcher

import (
	"runtime"
	"strings"
	"testing"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/resolve"
)

// Backend selection (grok-sandbox help backends) against a fake host: bwrap usable or not,
// Landlock or not, per profile shape. Every fallback says what is lost;
// nothing that needs bwrap runs without it.
func TestSelectBackend(t *testing.T) {
	saved := hostBackends
	defer func() { hostBackends = saved }()
	usable := Bubblewrap{Path: "/usr/bin/bwrap", Version: "0.8.0", Usable: true}
	broken := Bubblewrap{Path: "/usr/bin/bwrap", Reason: "bwrap cannot create a user namespace"}
	ws := t.TempDir()
	base := func(b string) *policy.Policy {
		return &policy.Policy{Profile: b, Base: b, Source: "built-in", Target: runtime.GOOS, Enforce: true,
			ReadAll: true, Workspace: ws, Grants: []policy.Grant{{Path: ws, Access: policy.Write}}}
	}
	withDeny := func(p *policy.Policy) *policy.Policy {
		p.Deny = []policy.DenyRule{{Entry: ".env", Prefix: ws}}
		return p
	}
	required := func(p *policy.Policy) *policy.Policy {
		p.Requirements = "/etc/grok-sandbox/requirements.toml"
		return p
	}
	off := &policy.Policy{Profile: config.Off, Base: config.Off, Target: runtime.GOOS}
	darwin := base(config.Strict)
	darwin.Target = "darwin"
	for _, tc := range []struct {
		name     string
		p        *policy.Policy
		bwrap    Bubblewrap
		landlock int
		want     string // backend, or "refused"
		degraded string // a word the degradation must hold
	}{
		{"off never needs a backend", off, broken, 0, BackendNone, ""},
		{"darwin target renders Seatbelt", darwin, broken, 0, BackendSeatbelt, ""},
		{"bwrap usable", base(config.Strict), usable, 7, BackendBwrap, ""},
		{"bwrap usable, deny", withDeny(base(config.Workspace)), usable, 0, BackendBwrap, ""},
		{"no bwrap, Landlock", base(config.Workspace), broken, 7, BackendLandlock, "Landlock (ABI 7)"},
		{"no bwrap, Landlock, deny refused", withDeny(base(config.Workspace)), broken, 7, "refused", ""},
		{"no bwrap, no Landlock, strict refused", base(config.Strict), broken, 0, "refused", ""},
		{"no bwrap, no Landlock, devbox unenforced", base(config.Devbox), broken, 0, BackendNone, "UNSANDBOXED"},
		{"no bwrap, no Landlock, devbox under requirements refused", required(base(config.Devbox)), broken, 0, "refused", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostBackends.bwrap = func(string, bool, bool) Bubblewrap { return tc.bwrap }
			hostBackends.landlockABI = func() int { return tc.landlock }
			plan := &Plan{Policy: tc.p, Dirs: resolve.Dirs{GrokHome: ws, DryRun: true}}
			err := plan.selectBackend()
			got := plan.Backend
			if err != nil {
				got = "refused"
			}
			if got != tc.want {
				t.Fatalf("backend %q (err %v), want %q", got, err, tc.want)
			}
			if tc.degraded != "" && !strings.Contains(plan.Degraded, tc.degraded) {
				t.Errorf("degradation %q does not say %q", plan.Degraded, tc.degraded)
			}
			if tc.degraded == "" && plan.Degraded != "" {
				t.Errorf("unexpected degradation %q", plan.Degraded)
			}
			if len(tc.p.Warnings) != 0 {
				t.Errorf("selectBackend changed the policy's warnings: %q", tc.p.Warnings)
			}
			if plan.Degraded != "" && !strings.Contains(strings.Join(plan.Warnings(), "\n"), plan.Degraded) {
				t.Errorf("the degradation is not among the plan's warnings")
			}
		})
	}
}
