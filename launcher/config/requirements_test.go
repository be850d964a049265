package config

import (
	"strings"
	"testing"
)

func TestRequirementsParsed(t *testing.T) {
	_, err := parseRequirements("/etc/grok-sandbox/requirements.toml", []byte(`# managed
[requirements]
default_profile = "team"
allowed_profiles = ["strict", "none", "team"]
deny = [".env", "~/.ssh/**"]

[profiles.team]
extends = "strict"
deny = ["secrets/**"]
`))
	if err == nil {
		t.Fatalf("off (as none) allowed together with deny: want a refusal")
	}
	if want := "requirements.toml:4: requirements.allowed_profiles: off runs no sandbox"; !strings.Contains(err.Error(), want) {
		t.Fatalf("got %q, want %q", err, want)
	}
	r, err := parseRequirements("/etc/grok-sandbox/requirements.toml", []byte(`[requirements]
default_profile = "team"
allowed_profiles = ["strict", "team", "read-only"]
deny = [".env", "~/.ssh/**"]
restrict_network = true

[profiles.team]
extends = "strict"
`))
	if err != nil {
		t.Fatal(err)
	}
	if r.DefaultProfile != "team" || strings.Join(r.Allowed, ",") != "strict,team,read-only" || len(r.Deny) != 2 || !r.RestrictNetwork {
		t.Fatalf("parsed %+v", r)
	}
	if r.DenyLine(1) != 4 || r.Line("restrict_network") != 5 || r.Where("allowed_profiles") != "/etc/grok-sandbox/requirements.toml:3" {
		t.Fatalf("lines: deny[1] %d, restrict_network %d, %s", r.DenyLine(1), r.Line("restrict_network"), r.Where("allowed_profiles"))
	}
	if _, ok := r.Profiles["team"]; !ok {
		t.Fatalf("the administrator's profile is missing")
	}
	for name, want := range map[string]string{
		"strict": "",
		"team":   "",
		"devbox": `profile "devbox" (chosen by --profile) is not allowed here: /etc/grok-sandbox/requirements.toml:3 allows only strict, team, read-only`,
		"none":   `profile "none" (chosen by --profile) is not allowed here`,
		"mine":   `profile "mine" (chosen by --profile) is not allowed here`,
	} {
		got := r.Admit(name, "--profile")
		if want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("Admit(%q) = %q, want %q", name, got, want)
		}
	}
	// Without allowed_profiles, off is still refused when something is
	// forced: it could apply nothing.
	r, err = parseRequirements("f", []byte("[requirements]\nrestrict_network = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Admit("off", "default"); !strings.Contains(got, "runs no sandbox, and f requires one for every launch (restrict_network at line 2)") {
		t.Errorf("Admit(off) = %q", got)
	}
	if got := r.Admit("workspace", "default"); got != "" {
		t.Errorf("Admit(workspace) = %q", got)
	}
}

func TestRequirementsRefusedWithFileLine(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[requirements]\ndefault_profil = \"strict\"\n", "f:2: requirements.default_profil: unknown key"},
		{"[requirement]\n", "f:1: requirement: unknown key"},
		{"[requirements]\ndefault_profile = \"workspace\"\nallowed_profiles = [\"strict\"]\n", `f:2: requirements.default_profile: "workspace" is not in allowed_profiles (line 3)`},
		{"[requirements]\nallowed_profiles = [\"strict\", \"team\"]\n", `f:2: requirements.allowed_profiles: entry 2 ("team") is neither a built-in profile nor one of this file's [profiles]`},
		{"[requirements]\ndefault_profile = \"nope\"\n", `f:2: requirements.default_profile: "nope" is neither a built-in profile`},
		{"[requirements]\nallowed_profiles = []\n", "f:2: requirements.allowed_profiles: is empty, which would refuse every launch"},
		{"[requirements]\nrestrict_network = false\n", "f:2: requirements.restrict_network: only true is required"},
		{"[requirements]\nrestrict_network = \"yes\"\n", "f:2: requirements.restrict_network: must be true, not a string"},
		{"[requirements]\ndeny = \".env\"\n", "f:2: requirements.deny: must be a list of strings, not a string"},
		{"[requirements]\ndeny = [\".env\", 3]\n", "f:2: requirements.deny: entry 2 must be a string, not an integer"},
		{"[requirements]\ndefault_profile = \"off\"\ndeny = [\".env\"]\n", "f:2: requirements.default_profile: off runs no sandbox"},
		{"[requirements\n", "f:2: expected"},
		{"[profiles.strict]\nextends = \"workspace\"\n", `f:1: profiles.strict: "strict" is a built-in profile's name`},
		{"[profiles.team]\nextends = \"off\"\n", `f:2: profiles.team.extends: "off": an administrator's profile extends workspace, devbox, read-only or strict`},
		{"[profiles.team]\nextends = \"other\"\n", `f:2: profiles.team.extends: "other"`},
		{"[profiles.team]\nread_wirte = []\n", "f:2: profiles.team.read_wirte: unknown key"},
	} {
		_, err := parseRequirements("f", []byte(tc.text))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.text, err, tc.want)
		}
	}
}
