package sbpl

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"grok-sandbox/globexpand"
	"grok-sandbox/launcher/policy"
)

// The policies below are built by hand the way the resolver builds them for
// macOS: canonical paths, temp dirs under /private, hook protection with the
// parents of the protected paths pinned.
const (
	ws     = "/Users/u/proj"
	home   = "/Users/u"
	grok   = "/Users/u/.grok"
	tmpdir = "/private/var/folders/ab/cdef/T"
)

func grant(path string, acc policy.Access) policy.Grant {
	return policy.Grant{Path: path, Access: acc, Why: "test", Source: "test"}
}

func newPolicy(name string, readAll bool, grants ...policy.Grant) *policy.Policy {
	p := &policy.Policy{
		Profile: name, Base: name, Source: "built-in", Target: "darwin", Enforce: true,
		Workspace: ws, Home: home, GrokHome: grok, ReadAll: readAll,
	}
	p.Grants = append(p.Grants, grants...)
	for _, d := range []string{"/private/tmp", "/private/var/tmp", tmpdir} {
		p.Grants = append(p.Grants, grant(d, policy.Write))
	}
	policy.SortGrants(p.Grants)
	return p
}

func protect(p *policy.Policy) {
	p.Protected = []string{grok + "/hooks", grok + "/hooks-paths"}
	p.Pinned = []string{"/Users", home, grok}
}

func deny(t *testing.T, p *policy.Policy, entries ...string) {
	for _, e := range entries {
		pat, err := globexpand.Parse(e, p.Workspace, p.Home)
		if err != nil {
			t.Fatal(err)
		}
		p.Deny = append(p.Deny, policy.DenyRule{Entry: e, Prefix: pat.Prefix, Rest: pat.Rest, Source: "/Users/u/.grok/sandbox.toml"})
	}
}

func profiles(t *testing.T) map[string]*policy.Policy {
	out := map[string]*policy.Policy{}

	p := newPolicy("workspace", true, grant(ws, policy.Write), grant(grok, policy.Write))
	protect(p)
	out["workspace"] = p

	p = newPolicy("read-only", true, grant(grok, policy.Write))
	protect(p)
	p.Network.RestrictChildren = true
	out["read-only"] = p

	var sys []policy.Grant
	for _, d := range []string{"/System", "/usr", "/bin", "/sbin", "/private/etc", "/Library/Apple", "/dev"} {
		sys = append(sys, grant(d, policy.Read))
	}
	p = newPolicy("strict", false, append(sys, grant(ws, policy.Write), grant(grok, policy.Write))...)
	protect(p)
	p.Network.RestrictChildren = true
	out["strict"] = p

	var top []policy.Grant
	for _, d := range []string{"/Applications", "/Library", "/Users", "/Volumes", "/opt", "/private"} {
		top = append(top, grant(d, policy.Write))
	}
	out["devbox"] = newPolicy("devbox", true, top...)

	p = newPolicy("custom", true, grant(ws, policy.Write), grant(grok, policy.Write),
		grant(ws+"/vendor", policy.Read), grant(ws+"/vendor/cache", policy.Write))
	p.Base = "workspace"
	protect(p)
	deny(t, p, "**/.env", "*.pem", "/Users/u/**/.ssh", "config/secret.json", "~/.aws")
	p.Network.Isolate = true
	out["custom"] = p
	return out
}

// probe is one expected decision. The same table is evaluated against the
// rendered Seatbelt profile and against the Linux meaning of the policy.
// darwin names probes that hold on macOS only, and why.
type probe struct {
	profile, op, path string
	allow             bool
	darwin            string
}

const (
	A = true
	D = false
)

var (
	wsFile   = ws + "/src/main.go"
	outside  = home + "/Documents/notes.txt"
	sessions = grok + "/sessions/x"
	hookFile = grok + "/hooks/x"
	devOnly  = "devices come from bwrap's --dev on Linux, not from the policy"
)

var probes = []probe{
	{"workspace", "read", wsFile, A, ""},
	{"workspace", "write", wsFile, A, ""},
	{"workspace", "unlink", wsFile, A, ""},
	{"workspace", "read", outside, A, ""},
	{"workspace", "write", outside, D, ""},
	{"workspace", "unlink", outside, D, ""},
	{"workspace", "write", "/private/tmp/x", A, ""},
	{"workspace", "write", tmpdir + "/x", A, ""},
	{"workspace", "write", "/usr/bin/env", D, ""},
	{"workspace", "write", sessions, A, ""},
	{"workspace", "unlink", grok + "/sessions", A, ""},
	{"workspace", "read", hookFile, A, ""},
	{"workspace", "write", hookFile, D, ""},
	{"workspace", "unlink", hookFile, D, ""},
	{"workspace", "unlink", grok + "/hooks", D, ""},
	{"workspace", "read", grok + "/hooks-paths", A, ""},
	{"workspace", "write", grok + "/hooks-paths", D, ""},
	{"workspace", "unlink", grok, D, ""},
	{"workspace", "unlink", home, D, ""},
	{"workspace", "unlink", ws, D, ""},
	{"workspace", "read", ws + "/.env", A, ""},
	{"workspace", "net", "", A, ""},
	{"workspace", "write", "/dev/null", A, devOnly},
	{"workspace", "write", "/dev/ttys003", A, devOnly},
	{"workspace", "write", "/dev/disk0", D, devOnly},

	{"read-only", "read", wsFile, A, ""},
	{"read-only", "write", wsFile, D, ""},
	{"read-only", "unlink", wsFile, D, ""},
	{"read-only", "write", "/private/tmp/x", A, ""},
	{"read-only", "write", sessions, A, ""},
	{"read-only", "read", hookFile, A, ""},
	{"read-only", "write", hookFile, D, ""},
	{"read-only", "unlink", grok, D, ""},
	{"read-only", "net", "", A, ""},

	{"strict", "read", wsFile, A, ""},
	{"strict", "write", wsFile, A, ""},
	{"strict", "read", outside, D, ""},
	{"strict", "write", outside, D, ""},
	{"strict", "read", home, D, ""},
	{"strict", "read", "/usr/bin/env", A, ""},
	{"strict", "write", "/usr/bin/env", D, ""},
	{"strict", "unlink", "/usr/bin/env", D, ""},
	{"strict", "read", "/private/etc/hosts", A, ""},
	{"strict", "read", "/Library/Apple/x", A, ""},
	{"strict", "read", "/Library/Preferences/x", D, ""},
	{"strict", "write", "/private/tmp/x", A, ""},
	{"strict", "write", sessions, A, ""},
	{"strict", "read", hookFile, A, ""},
	{"strict", "write", hookFile, D, ""},
	{"strict", "unlink", grok, D, ""},
	{"strict", "read", "/dev/ttys003", A, ""},
	{"strict", "write", "/dev/null", A, devOnly},
	{"strict", "write", "/dev/ttys003", A, devOnly},
	{"strict", "net", "", A, ""},

	{"devbox", "write", outside, A, ""},
	{"devbox", "write", "/Applications/x", A, ""},
	{"devbox", "write", "/private/etc/hosts", A, ""},
	{"devbox", "read", "/System/x", A, ""},
	{"devbox", "write", "/System/x", D, ""},
	{"devbox", "write", hookFile, A, ""},
	{"devbox", "unlink", home, A, ""},
	{"devbox", "net", "", A, ""},

	{"custom", "read", wsFile, A, ""},
	{"custom", "write", wsFile, A, ""},
	{"custom", "read", ws + "/.env", D, ""},
	{"custom", "write", ws + "/.env", D, ""},
	{"custom", "unlink", ws + "/.env", D, ""},
	{"custom", "read", ws + "/a/b/c/.env", D, ""},
	{"custom", "write", ws + "/a/b/c/.env", D, ""},
	{"custom", "read", ws + "/.env/inner", D, ""},
	{"custom", "read", ws + "/x.env", A, ""},
	{"custom", "write", ws + "/x.env", A, ""},
	{"custom", "read", ws + "/a.pem", D, ""},
	{"custom", "read", ws + "/sub/a.pem", A, ""},
	{"custom", "write", ws + "/sub/a.pem", A, ""},
	{"custom", "read", home + "/.ssh", D, ""},
	{"custom", "read", home + "/.ssh/id_rsa", D, ""},
	{"custom", "read", home + "/src/x/.ssh/config", D, ""},
	{"custom", "read", home + "/.sshx", A, ""},
	{"custom", "read", home + "/.aws/credentials", D, ""},
	{"custom", "read", home + "/.aws", D, ""},
	{"custom", "read", ws + "/config/secret.json", D, ""},
	{"custom", "write", ws + "/config/secret.json", D, ""},
	{"custom", "unlink", ws + "/config/secret.json", D, ""},
	{"custom", "unlink", ws + "/config", D, ""},
	{"custom", "unlink", ws, D, ""},
	{"custom", "read", ws + "/config/other.json", A, ""},
	{"custom", "unlink", ws + "/config/other.json", A, ""},
	{"custom", "read", ws + "/vendor/lib.go", A, ""},
	{"custom", "write", ws + "/vendor/lib.go", D, ""},
	{"custom", "unlink", ws + "/vendor/lib.go", D, ""},
	{"custom", "unlink", ws + "/vendor", D, ""},
	{"custom", "write", ws + "/vendor/cache/x", A, ""},
	{"custom", "unlink", ws + "/vendor/cache/x", A, ""},
	{"custom", "read", hookFile, A, ""},
	{"custom", "write", hookFile, D, ""},
	{"custom", "write", sessions, A, ""},
	{"custom", "unlink", grok, D, ""},
	{"custom", "net", "", D, ""},
	// A directory under a "**" of a glob can be renamed on macOS: whatever
	// it holds still matches "**/.env" afterwards, and the regex applies
	// at run time. Linux pins the parents of every match that exists at
	// launch, since its masks are fixed then.
	{"custom", "unlink", ws + "/a", A, "renaming a directory under ** keeps its matches matched on macOS; Linux pins parents of launch-time matches"},
}

// seatbeltOps maps a probe to the Seatbelt operation the kernel checks.
var seatbeltOps = map[string]string{
	"read":   "file-read-data",
	"write":  "file-write-data",
	"unlink": "file-write-unlink",
	"net":    "network-outbound",
}

func TestDecisions(t *testing.T) {
	pols := profiles(t)
	rendered := map[string]*profile{}
	for name, p := range pols {
		s, err := Render(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pr, err := check(s.Text, s.Params)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, s.Text)
		}
		rendered[name] = pr
	}
	seen := map[string]bool{}
	for _, pb := range probes {
		seen[pb.profile] = true
		got, by := rendered[pb.profile].decide(seatbeltOps[pb.op], pb.path)
		if got != pb.allow {
			t.Errorf("seatbelt %s: %s %s: allow=%v (by %s), want %v", pb.profile, pb.op, pb.path, got, by, pb.allow)
		}
		if pb.darwin != "" {
			continue
		}
		if got := linuxDecide(pols[pb.profile], pb.op, pb.path); got != pb.allow {
			t.Errorf("linux %s: %s %s: allow=%v, want %v", pb.profile, pb.op, pb.path, got, pb.allow)
		}
	}
	for name := range pols {
		if !seen[name] {
			t.Errorf("no probes for %s", name)
		}
	}
}

// linuxDecide is the Linux meaning of the policy, from the policy's own
// functions: bwrap mounts every layer (so none can be renamed), masks every
// deny match and everything below it, and the resolver pins the parents of
// every masked path.
func linuxDecide(p *policy.Policy, op, path string) bool {
	if op == "net" {
		return !p.Network.Isolate
	}
	if linuxDenied(p, path) {
		return false
	}
	switch op {
	case "read":
		return p.AccessAt(path) != policy.Hidden
	case "write":
		return p.AccessAt(path) == policy.Write
	case "unlink":
		for _, l := range p.Layers() {
			if l.Path == path {
				return false // a mount point: EBUSY
			}
		}
		for _, d := range p.Deny {
			if d.Rest == "" && policy.Within(d.Prefix, path) {
				return false // a pinned parent of a mask
			}
		}
		return p.AccessAt(filepath.Dir(path)) == policy.Write
	}
	panic("unknown probe op " + op)
}

func linuxDenied(p *policy.Policy, path string) bool {
	for _, d := range p.Deny {
		pat := globexpand.Pattern{Entry: d.Entry, Glob: d.Rest != "", Prefix: d.Prefix, Rest: d.Rest}
		for a := path; ; a = filepath.Dir(a) {
			if pat.Match(a) {
				return true
			}
			if a == "/" {
				break
			}
		}
	}
	return false
}

func TestRenderOffRefused(t *testing.T) {
	p := newPolicy("off", true)
	p.Enforce = false
	if _, err := Render(p); err == nil {
		t.Fatal("off rendered a profile")
	}
}

func TestRenderRefusesUnwritable(t *testing.T) {
	p := profiles(t)["workspace"]
	p.Deny = []policy.DenyRule{{Entry: `a"b*`, Prefix: ws, Rest: `a"b*`}}
	if _, err := Render(p); err == nil || !strings.Contains(err.Error(), "double quote") {
		t.Fatalf("got %v, want a double-quote error", err)
	}
	p = profiles(t)["workspace"]
	p.Deny = []policy.DenyRule{{Entry: "[", Prefix: ws, Rest: "["}}
	if _, err := Render(p); err == nil {
		t.Fatal("an invalid glob rendered")
	}
	p = profiles(t)["workspace"]
	p.Grants = append(p.Grants, grant("/Users/u/../x", policy.Write))
	if _, err := Render(p); err == nil {
		t.Fatal("an unclean path rendered")
	}
}

// Paths with quotes and backslashes survive quoting: the checker reads them
// back to the same path.
func TestQuoting(t *testing.T) {
	odd := `/Users/u/we"ird\dir (1)`
	p := newPolicy("workspace", true, grant(odd, policy.Write))
	p.Workspace = odd
	p.Grants = append(p.Grants, grant(odd+`/x"y`, policy.Read))
	s, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Params["WORKSPACE"] != odd {
		t.Fatalf("params %v", s.Params)
	}
	pr, err := check(s.Text, s.Params)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Text)
	}
	if ok, _ := pr.decide("file-write-data", odd+"/f"); !ok {
		t.Error("write in the odd workspace denied")
	}
	if ok, _ := pr.decide("file-write-data", odd+`/x"y/f`); ok {
		t.Error(`write in the read-only x"y allowed`)
	}
}

func TestParamsAndNotes(t *testing.T) {
	pols := profiles(t)
	s, err := Render(pols["read-only"])
	if err != nil {
		t.Fatal(err)
	}
	// read-only never names the workspace as a rule root.
	want := map[string]string{"GROK_HOME": grok, "HOME": home}
	if !reflect.DeepEqual(s.Params, want) {
		t.Errorf("params %v, want %v", s.Params, want)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "restrict_network") {
		t.Errorf("notes %q", s.Notes)
	}
	s, err = Render(pols["custom"])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Text, "(allow network*)") {
		t.Error("isolated profile allows the network")
	}
	if !strings.Contains(s.Text, `(subpath (param "WORKSPACE"))`) {
		t.Error("workspace not written as its parameter")
	}
}

func TestDeterministicAndArgs(t *testing.T) {
	a, err := Render(profiles(t)["custom"])
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(profiles(t)["custom"])
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != b.Text || !reflect.DeepEqual(a.Params, b.Params) {
		t.Fatal("two renders of the same policy differ")
	}
	args := a.Args([]string{"sh", "-c", "echo hi"})
	want := []string{SandboxExec, "-p", a.Text,
		"-DGROK_HOME=" + grok, "-DHOME=" + home, "-DWORKSPACE=" + ws,
		"--", "sh", "-c", "echo hi"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args %q\nwant %q", args, want)
	}
}

// Directories inside a glob whose rename could carry a match out of it are
// pinned: certs/* for "certs/*/key.pem", x directories for "**/x/*.pem";
// others stay renamable.
func TestGlobPins(t *testing.T) {
	p := newPolicy("custom", true, grant(ws, policy.Write), grant(grok, policy.Write))
	deny(t, p, "certs/*/key.pem", "**/x/*.pem")
	s, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := check(s.Text, s.Params)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op, path string
		allow    bool
	}{
		{"file-read-data", ws + "/certs/a/key.pem", false},
		{"file-read-data", ws + "/certs/a/other.pem", true},
		{"file-write-unlink", ws + "/certs/a", false},
		{"file-write-unlink", ws + "/certs", false},
		{"file-write-unlink", ws + "/certs/a/b", true},
		{"file-write-unlink", ws + "/other", true},
		{"file-read-data", ws + "/q/x/k.pem", false},
		{"file-write-unlink", ws + "/q/x", false},
		{"file-write-unlink", ws + "/x", false},
		{"file-write-unlink", ws + "/q", true},
		{"file-write-unlink", ws + "/q/y", true},
	}
	for _, c := range cases {
		if allow, by := pr.decide(c.op, c.path); allow != c.allow {
			t.Errorf("%s %s: allow=%v (by %s), want %v", c.op, c.path, allow, by, c.allow)
		}
	}
}

// Every deny rule and every hook-protection rule names itself in what
// Seatbelt reports to the system log, so that the predicate of `grok-sandbox help macos`
// (MessagePrefix) finds each denial with its entry; nothing else does.
func TestDenialsNamed(t *testing.T) {
	p := newPolicy("custom", true, grant(ws, policy.Write), grant(grok, policy.Write))
	protect(p)
	deny(t, p, ".env", "certs/*/key.pem")
	s, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := check(s.Text, s.Params); err != nil {
		t.Fatal(err)
	}
	denies, protects := 0, 0
	for _, line := range strings.Split(s.Text, "\n") {
		named := strings.Contains(line, `(with message "`+MessagePrefix)
		switch {
		case strings.HasPrefix(line, "(deny file-read* file-write* process-exec "):
			denies++
			if !named || !strings.Contains(line, `deny \"`) {
				t.Errorf("deny rule without its entry in the report: %s", line)
			}
		case named && strings.HasPrefix(line, "(deny file-write* (subpath ") && strings.Contains(line, "protected: "):
			protects++
		case named:
			t.Errorf("message on a rule that is neither: %s", line)
		}
	}
	if denies != 2 || protects != len(p.Protected) || protects == 0 {
		t.Errorf("%d deny rules and %d named protection rules, want 2 and %d", denies, protects, len(p.Protected))
	}
}
