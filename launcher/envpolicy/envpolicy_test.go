package envpolicy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func names(env []string) []string {
	out := []string{}
	for _, kv := range env {
		n, _, _ := strings.Cut(kv, "=")
		out = append(out, n)
	}
	return out
}

func decision(r Result, name string) (Decision, bool) {
	for _, d := range r.Decisions {
		if d.Name == name {
			return d, true
		}
	}
	return Decision{}, false
}

func TestDefaultUnchanged(t *testing.T) {
	env := []string{"AWS_SECRET_ACCESS_KEY=s3cr3t", "GITHUB_TOKEN=ghp_x", "HOME=/home/u", "PATH=/bin", "ZED="}
	r := Apply(env, Default(), "linux", nil)
	if !reflect.DeepEqual(r.Env, env) {
		t.Fatalf("Default changed env:\n got %q\nwant %q", r.Env, env)
	}
	for _, d := range r.Decisions {
		if d.Action != ActionKept || d.Reason != "inherit=all" {
			t.Errorf("decision %+v", d)
		}
	}
}

func TestNormalisation(t *testing.T) {
	env := []string{"B=1", "noequals", "=C:", "A=first", "A=second", "B=2"}
	r := Apply(env, Default(), "linux", nil)
	want := []string{"A=first", "B=1"}
	if !reflect.DeepEqual(r.Env, want) {
		t.Fatalf("got %q want %q", r.Env, want)
	}
	if len(r.Decisions) != 2 {
		t.Fatalf("decisions %+v", r.Decisions)
	}
	// nil environ gives a non-nil empty Env.
	if r := Apply(nil, Default(), "linux", nil); r.Env == nil || len(r.Env) != 0 {
		t.Fatalf("nil environ: %#v", r.Env)
	}
}

func TestApply(t *testing.T) {
	base := []string{
		"PATH=/bin", "HOME=/home/u", "USER=u", "LC_ALL=C", "LC_CTYPE=UTF-8",
		"__CF_USER_TEXT_ENCODING=0x1F5", "DISPLAY=:0", "SSH_AUTH_SOCK=/tmp/a",
		"GITHUB_TOKEN=ghp_x", "aws_secret_access_key=s3", "MY_KEY_FILE=/k",
		"ACME_ID=1", "ACME2=2", "CI_X=3", "CIX=4", "EDITOR=vi",
	}
	tests := []struct {
		name     string
		env      []string
		p        Rules
		platform string
		forced   map[string]string
		want     []string
		why      map[string]string // name -> "action: reason"
	}{
		{
			name: "inherit all (empty string) with default excludes",
			env:  base, p: Rules{}, platform: "linux",
			want: []string{"ACME2=2", "ACME_ID=1", "CIX=4", "CI_X=3", "DISPLAY=:0", "EDITOR=vi", "HOME=/home/u",
				"LC_ALL=C", "LC_CTYPE=UTF-8", "PATH=/bin", "SSH_AUTH_SOCK=/tmp/a", "USER=u", "__CF_USER_TEXT_ENCODING=0x1F5"},
			why: map[string]string{
				"GITHUB_TOKEN":          "dropped: default exclude *TOKEN*",
				"aws_secret_access_key": "dropped: default exclude *KEY*",
				"MY_KEY_FILE":           "dropped: default exclude *KEY*",
				"EDITOR":                "kept: inherit=all",
			},
		},
		{
			name: "ignore_default_excludes keeps secrets",
			env:  []string{"GITHUB_TOKEN=t", "aws_secret_access_key=s", "MY_KEY_FILE=k"},
			p:    Rules{Inherit: "all", IgnoreDefaultExcludes: true}, platform: "linux",
			want: []string{"GITHUB_TOKEN=t", "MY_KEY_FILE=k", "aws_secret_access_key=s"},
		},
		{
			name: "inherit core linux",
			env:  base, p: Rules{Inherit: "core", IgnoreDefaultExcludes: true}, platform: "linux",
			want: []string{"HOME=/home/u", "LC_ALL=C", "LC_CTYPE=UTF-8", "PATH=/bin", "USER=u"},
			why: map[string]string{
				"DISPLAY":                 "dropped: inherit=core",
				"SSH_AUTH_SOCK":           "dropped: inherit=core",
				"__CF_USER_TEXT_ENCODING": "dropped: inherit=core",
				"LC_ALL":                  "kept: inherit=core",
			},
		},
		{
			name: "inherit core darwin",
			env:  base, p: Rules{Inherit: "core", IgnoreDefaultExcludes: true}, platform: "darwin",
			want: []string{"HOME=/home/u", "LC_ALL=C", "LC_CTYPE=UTF-8", "PATH=/bin", "USER=u", "__CF_USER_TEXT_ENCODING=0x1F5"},
			why:  map[string]string{"__CF_USER_TEXT_ENCODING": "kept: inherit=core"},
		},
		{
			name: "inherit core is case-insensitive and not a prefix match",
			env:  []string{"path=/x", "PATHX=1", "lc_all=C", "LC_=1", "LC=2"},
			p:    Rules{Inherit: "core", IgnoreDefaultExcludes: true}, platform: "linux",
			want: []string{"LC_=1", "lc_all=C", "path=/x"},
		},
		{
			name: "inherit none",
			env:  base, p: Rules{Inherit: "none", IgnoreDefaultExcludes: true}, platform: "linux",
			want: []string{},
			why:  map[string]string{"PATH": "dropped: inherit=none"},
		},
		{
			name: "unknown inherit fails closed",
			env:  []string{"PATH=/bin"}, p: Rules{Inherit: "everything"}, platform: "linux",
			want: []string{},
		},
		{
			name: "exclude with * and ?",
			env:  base,
			p:    Rules{IgnoreDefaultExcludes: true, Exclude: []string{"ACME_*", "CI?X", "*TOKEN"}}, platform: "linux",
			want: []string{"ACME2=2", "CIX=4", "DISPLAY=:0", "EDITOR=vi", "HOME=/home/u",
				"LC_ALL=C", "LC_CTYPE=UTF-8", "MY_KEY_FILE=/k", "PATH=/bin", "SSH_AUTH_SOCK=/tmp/a", "USER=u",
				"__CF_USER_TEXT_ENCODING=0x1F5", "aws_secret_access_key=s3"},
			why: map[string]string{
				"ACME_ID":      "dropped: exclude ACME_*",
				"CIX":          "kept: inherit=all", // ? is exactly one character
				"CI_X":         "dropped: exclude CI?X",
				"GITHUB_TOKEN": "dropped: exclude *TOKEN",
			},
		},
		{
			name: "? matches exactly one character",
			env:  []string{"CIX=1", "CI_X=2", "CI__X=3"},
			p:    Rules{IgnoreDefaultExcludes: true, Exclude: []string{"CI?X"}}, platform: "linux",
			want: []string{"CIX=1", "CI__X=3"},
		},
		{
			name: "patterns are case-insensitive both ways",
			env:  []string{"Acme_Id=1", "acme_other=2", "KEEP=3"},
			p:    Rules{IgnoreDefaultExcludes: true, Exclude: []string{"aCmE_*"}}, platform: "linux",
			want: []string{"KEEP=3"},
		},
		{
			name:     "set overrides an excluded and a default-excluded name",
			env:      []string{"ACME_ID=old", "GITHUB_TOKEN=old"},
			p:        Rules{Exclude: []string{"ACME_*"}, Set: map[string]string{"ACME_ID": "new", "GITHUB_TOKEN": "", "MY_FLAG": "1"}},
			platform: "linux",
			want:     []string{"ACME_ID=new", "GITHUB_TOKEN=", "MY_FLAG=1"},
			why: map[string]string{
				"ACME_ID":      "set: set (overrides exclude ACME_*)",
				"GITHUB_TOKEN": "set: set (overrides default exclude *TOKEN*)",
				"MY_FLAG":      "set: set",
			},
		},
		{
			name: "set under inherit none",
			env:  []string{"PATH=/bin"},
			p:    Rules{Inherit: "none", Set: map[string]string{"PATH": "/usr/bin"}}, platform: "linux",
			want: []string{"PATH=/usr/bin"},
		},
		{
			name: "include_only after set drops set names not listed",
			env:  base,
			p: Rules{IgnoreDefaultExcludes: true, IncludeOnly: []string{"path", "HOME", "LC_*", "MY_*"},
				Set: map[string]string{"MY_FLAG": "1", "OTHER_FLAG": "2"}},
			platform: "linux",
			want:     []string{"HOME=/home/u", "LC_ALL=C", "LC_CTYPE=UTF-8", "MY_FLAG=1", "MY_KEY_FILE=/k", "PATH=/bin"},
			why: map[string]string{
				"OTHER_FLAG": "dropped: not in include_only",
				"EDITOR":     "dropped: not in include_only",
				"MY_FLAG":    "set: set",
			},
		},
		{
			name: "include_only cannot resurrect an excluded name",
			env:  []string{"PATH=/bin", "GITHUB_TOKEN=t"},
			p:    Rules{IncludeOnly: []string{"PATH", "GITHUB_TOKEN"}}, platform: "linux",
			want: []string{"PATH=/bin"},
			why:  map[string]string{"GITHUB_TOKEN": "dropped: default exclude *TOKEN*"},
		},
		{
			name:     "empty lists and nil set behave like absent",
			env:      []string{"A=1", "B=2"},
			p:        Rules{Inherit: "all", IgnoreDefaultExcludes: true, Exclude: []string{}, IncludeOnly: []string{}, Set: map[string]string{}},
			platform: "linux",
			want:     []string{"A=1", "B=2"},
		},
		{
			name:     "forced survives include_only and inherit none and overrides set",
			env:      []string{"PATH=/bin", "GROK_SANDBOX_PROFILE=evil"},
			p:        Rules{Inherit: "none", IncludeOnly: []string{"PATH"}, Exclude: []string{"GROK_*"}, Set: map[string]string{"GROK_SANDBOX_BACKEND": "x"}},
			platform: "linux",
			forced:   map[string]string{"GROK_SANDBOX_PROFILE": "strict", "GROK_SANDBOX_BACKEND": "bwrap"},
			want:     []string{"GROK_SANDBOX_BACKEND=bwrap", "GROK_SANDBOX_PROFILE=strict"},
			why: map[string]string{
				"GROK_SANDBOX_PROFILE": "forced: launcher",
				"GROK_SANDBOX_BACKEND": "forced: launcher",
				"PATH":                 "dropped: inherit=none",
			},
		},
		{
			name:     "invalid forced name is not exported",
			env:      nil,
			p:        Default(),
			platform: "linux",
			forced:   map[string]string{"A=B": "1", "": "2", "OK": "3"},
			want:     []string{"OK=3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Apply(tc.env, tc.p, tc.platform, tc.forced)
			if !reflect.DeepEqual(r.Env, tc.want) {
				t.Errorf("Env:\n got %q\nwant %q", r.Env, tc.want)
			}
			for name, want := range tc.why {
				d, ok := decision(r, name)
				if !ok {
					t.Errorf("no decision for %s", name)
					continue
				}
				if got := d.Action + ": " + d.Reason; got != want {
					t.Errorf("%s: got %q want %q", name, got, want)
				}
			}
			// Decisions: sorted, unique, and every Env name has a live decision.
			for i := 1; i < len(r.Decisions); i++ {
				if r.Decisions[i-1].Name >= r.Decisions[i].Name {
					t.Errorf("decisions not sorted/unique at %d: %+v", i, r.Decisions)
				}
			}
			for _, n := range names(r.Env) {
				d, ok := decision(r, n)
				if !ok || d.Action == ActionDropped {
					t.Errorf("env name %s has decision %+v", n, d)
				}
			}
			if !isSortedByName(r.Env) {
				t.Errorf("env not sorted: %q", r.Env)
			}
		})
	}
}

func isSortedByName(env []string) bool {
	n := names(env)
	for i := 1; i < len(n); i++ {
		if n[i-1] >= n[i] {
			return false
		}
	}
	return true
}

func TestDecisionsNeverContainValues(t *testing.T) {
	const secret = "sk-live-51HcXyZverysecretvalue"
	env := []string{
		"OPENAI_API_KEY=" + secret, "PLAIN=" + secret, "ACME_X=" + secret,
		"PATH=/bin", "noequals" + secret, // malformed: not reported at all
	}
	policies := []Rules{
		Default(), {}, {Inherit: "core"}, {Inherit: "none"},
		{Exclude: []string{"ACME_*"}, IncludeOnly: []string{"PATH", "PLAIN"}, Set: map[string]string{"NEW": secret}},
	}
	for i, p := range policies {
		r := Apply(env, p, "darwin", map[string]string{"GROK_SANDBOX_PROFILE": secret})
		if s := fmt.Sprint(r.Decisions); strings.Contains(s, secret) || strings.Contains(s, "sk-live") {
			t.Errorf("policy %d: decisions leak value: %s", i, s)
		}
		if s := fmt.Sprintf("%+v %#v", r.Decisions, r.Decisions); strings.Contains(s, secret) {
			t.Errorf("policy %d: decisions leak value: %s", i, s)
		}
	}
}

func TestCorePatterns(t *testing.T) {
	linux := CorePatterns("linux")
	darwin := CorePatterns("darwin")
	if len(darwin) != len(linux)+1 || darwin[len(darwin)-1] != "__CF_USER_TEXT_ENCODING" {
		t.Fatalf("darwin %q linux %q", darwin, linux)
	}
	for _, bad := range []string{"DISPLAY", "WAYLAND_DISPLAY", "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"} {
		if matchAny(darwin, bad) != "" {
			t.Errorf("core must not include %s", bad)
		}
	}
	linux[0] = "MUTATED"
	if CorePatterns("linux")[0] != "PATH" {
		t.Fatal("CorePatterns returns shared slice")
	}
	if !reflect.DeepEqual(CorePatterns("windows"), CorePatterns("linux")) {
		t.Fatal("unknown platform should get the common set")
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*KEY*", "MY_KEY_FILE", true},
		{"*KEY*", "KEY", true},
		{"*key*", "aws_secret_access_KEY", true},
		{"*KEY*", "KE", false},
		{"A*B*C", "AXXBYYC", true},
		{"A*B*C", "AXXBYYCD", false},
		{"A?C", "ABC", true},
		{"A?C", "AC", false},
		{"A?C", "ABBC", false},
		{"*", "", true},
		{"?", "", false},
		{"PATH", "PATHX", false},
		{"PATH", "XPATH", false},
		{"**A", "BA", true},
		{"a*", "Ä", false},
	}
	for _, tc := range tests {
		if got := match(tc.pat, tc.name); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Rules
		want []string // substrings of the error; nil means valid
	}{
		{"default", Default(), nil},
		{"zero", Rules{}, nil},
		{"full valid", Rules{Inherit: "core", Exclude: []string{"ACME_*", "CI_?", "a.b-c"},
			IncludeOnly: []string{"PATH", "LC_*"}, Set: map[string]string{"MY_FLAG": "1", "EMPTY": ""}}, nil},
		{"none", Rules{Inherit: "none"}, nil},
		{"unknown inherit", Rules{Inherit: "ALL"}, []string{`inherit "ALL"`}},
		{"bracket", Rules{Exclude: []string{"A", "B", "A[B"}}, []string{`exclude[2] "A[B": invalid character '['`}},
		{"equals", Rules{Exclude: []string{"A=B"}}, []string{`exclude[0] "A=B": invalid character '='`}},
		{"space", Rules{IncludeOnly: []string{"PATH", "HO ME"}}, []string{`include_only[1] "HO ME": invalid character ' '`}},
		{"tab", Rules{IncludeOnly: []string{"\tX"}}, []string{`include_only[0] "\tX"`}},
		{"empty pattern", Rules{Exclude: []string{""}}, []string{`exclude[0] "": empty pattern`}},
		{"empty set key", Rules{Set: map[string]string{"": "1"}}, []string{`set key "": empty variable name`}},
		{"= in set key", Rules{Set: map[string]string{"A=B": "1"}}, []string{`set key "A=B": variable name contains '='`}},
		{"NUL in set value", Rules{Set: map[string]string{"A": "x\x00y"}}, []string{`set key "A": value contains NUL`}},
		{"several errors joined", Rules{Inherit: "x", Exclude: []string{"*["}, Set: map[string]string{"=": ""}},
			[]string{`inherit "x"`, `exclude[0] "*["`, `set key "="`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got nil", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateDoesNotLeakSetValues(t *testing.T) {
	err := Rules{Set: map[string]string{"A=B": "topsecret", "C": "also\x00secret"}}.Validate()
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err = %v", err)
	}
}
