package landlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"grok-sandbox/launcher/policy"
)

// tree makes a temporary tree shaped like a workspace run:
//
//	ws/file.txt ws/sub/ ws/ro/f ws/prot/target.txt ws/prot/other.txt ws/link -> ../outside
//	gh/hooks/h.sh gh/hooks-paths gh/sessions/ gh/config.toml
//	tmp/ outside/secret.txt
func tree(t testing.TB, root string) string {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/sub", "ws/ro", "ws/prot", "gh/hooks", "gh/sessions", "tmp", "outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/file.txt", "ws/ro/f", "ws/prot/target.txt", "ws/prot/other.txt",
		"gh/hooks/h.sh", "gh/hooks-paths", "gh/config.toml", "outside/secret.txt"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("content of "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(root, "ws/link")); err != nil {
		t.Fatal(err)
	}
	return root
}

type polOpts struct {
	strict    bool
	readOnly  []string // relative to root
	protected []string // besides gh/hooks and gh/hooks-paths
	writable  []string // extra write grants
	noHooks   bool
	isolate   bool
}

// testPolicy is what the resolver gives for a workspace (or strict) run on
// the tree.
func testPolicy(root string, o polOpts) *policy.Policy {
	j := func(rel string) string { return filepath.Join(root, rel) }
	p := &policy.Policy{Profile: "workspace", Base: "workspace", Target: "linux", Enforce: true,
		Workspace: j("ws"), Home: root, GrokHome: j("gh"), ReadAll: !o.strict}
	p.Network.Isolate = o.isolate
	if o.strict {
		p.Profile, p.Base = "strict", "strict"
		for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"} {
			if c, err := filepath.EvalSymlinks(d); err == nil && (c == d || !policy.Within(c, "/usr")) {
				p.Grants = append(p.Grants, policy.Grant{Path: c, Access: policy.Read, Why: "system path"})
			}
		}
	}
	for _, d := range append([]string{"ws", "gh", "tmp"}, o.writable...) {
		p.Grants = append(p.Grants, policy.Grant{Path: j(d), Access: policy.Write})
	}
	for _, d := range o.readOnly {
		p.Grants = append(p.Grants, policy.Grant{Path: j(d), Access: policy.Read, Why: "read_only entry"})
	}
	policy.SortGrants(p.Grants)
	prot := o.protected
	if !o.noHooks {
		prot = append([]string{"gh/hooks", "gh/hooks-paths"}, prot...)
	}
	pinned := map[string]bool{}
	for _, q := range prot {
		p.Protected = append(p.Protected, j(q))
		for d := filepath.Dir(j(q)); d != "/"; d = filepath.Dir(d) {
			if !pinned[d] {
				pinned[d] = true
				p.Pinned = append(p.Pinned, d)
			}
		}
	}
	policy.SortPaths(p.Protected)
	policy.SortPaths(p.Pinned)
	return p
}

// under gives the rules below root, keyed by their path relative to it, as
// access strings.
func under(rs *Ruleset, root string) map[string]string {
	out := map[string]string{}
	for _, r := range rs.Rules {
		if policy.Within(r.Path, root) {
			rel, _ := filepath.Rel(root, r.Path)
			out[rel] = AccessString(r.Access)
		}
	}
	return out
}

func TestPlan(t *testing.T) {
	const abi = 7
	h := handledFS(abi)
	all, file, read, readFile := AccessString(h), AccessString(h&fileRights), AccessString(readRights), AccessString(readRights&fileRights)
	cases := []struct {
		name  string
		opts  polOpts
		want  map[string]string
		notes []string // substrings expected among the notes
	}{
		{
			name: "workspace",
			want: map[string]string{
				"gh": read, "gh/config.toml": file, "gh/sessions": all,
				"gh/hooks": read, "gh/hooks-paths": readFile,
				"ws": all, "tmp": all,
			},
			notes: []string{"/gh is split to keep", "nothing can be created directly in it"},
		},
		{
			name: "read_only entry inside the workspace",
			opts: polOpts{readOnly: []string{"ws/ro"}},
			want: map[string]string{
				"gh": read, "gh/config.toml": file, "gh/sessions": all,
				"gh/hooks": read, "gh/hooks-paths": readFile,
				"ws": read, "ws/file.txt": file, "ws/sub": all, "ws/prot": all, "ws/ro": read,
				"tmp": all,
			},
			notes: []string{"/ws is split to keep", "/ws/link is a symlink in the split directory"},
		},
		{
			name: "protected target inside the workspace",
			opts: polOpts{protected: []string{"ws/prot/target.txt"}},
			want: map[string]string{
				"gh": read, "gh/config.toml": file, "gh/sessions": all,
				"gh/hooks": read, "gh/hooks-paths": readFile,
				"ws": read, "ws/file.txt": file, "ws/sub": all, "ws/ro": all,
				"ws/prot": read, "ws/prot/other.txt": file, "ws/prot/target.txt": readFile,
				"tmp": all,
			},
			notes: []string{"/ws/prot is split", "metadata"},
		},
		{
			name: "writable grant around the workspace splits from the top",
			opts: polOpts{writable: []string{"."}, protected: []string{"ws/prot/target.txt"}},
			want: map[string]string{
				".":  read,
				"gh": read, "gh/config.toml": file, "gh/sessions": all,
				"gh/hooks": read, "gh/hooks-paths": readFile,
				"ws": read, "ws/file.txt": file, "ws/sub": all, "ws/ro": all,
				"ws/prot": read, "ws/prot/other.txt": file, "ws/prot/target.txt": readFile,
				"tmp": all, "outside": all,
			},
		},
		{
			name: "writable grant inside a read-only one inside a writable one",
			opts: polOpts{readOnly: []string{"ws/prot"}, writable: []string{"ws/prot/other.txt"}, noHooks: true},
			want: map[string]string{
				"gh": all, "tmp": all,
				"ws": read, "ws/file.txt": file, "ws/sub": all, "ws/ro": all,
				"ws/prot": read, "ws/prot/other.txt": file,
			},
		},
		{
			name: "strict",
			opts: polOpts{strict: true, readOnly: []string{"outside"}},
			want: map[string]string{
				"gh": read, "gh/config.toml": file, "gh/sessions": all,
				"gh/hooks": read, "gh/hooks-paths": readFile,
				"ws": all, "tmp": all, "outside": read,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, "")
			p := testPolicy(root, c.opts)
			rs, err := RulesetFor(p, abi)
			if err != nil {
				t.Fatal(err)
			}
			got := under(rs, root)
			for k, w := range c.want {
				if got[k] != w {
					t.Errorf("%s: got %s, want %s", k, got[k], w)
				}
			}
			for k, g := range got {
				if _, ok := c.want[k]; !ok {
					t.Errorf("unexpected rule %s: %s", k, g)
				}
			}
			rootRule := rs.effective("/")
			if c.opts.strict != (rootRule == 0) {
				t.Errorf("rights on /: %s (strict %v)", AccessString(rootRule), c.opts.strict)
			}
			if p.ReadAll && rootRule != readRights {
				t.Errorf("rights on /: %s, want %s", AccessString(rootRule), read)
			}
			if a := rs.effective("/dev/null"); a&accessWriteFile == 0 || a&accessTruncate == 0 {
				t.Errorf("/dev/null: %s", AccessString(a))
			}
			// /proc is readable, never writable (sysctls check the uid only).
			if a := rs.effective("/proc/sys/kernel/core_pattern"); a != readRights {
				t.Errorf("/proc: %s, want %s", AccessString(a), AccessString(readRights))
			}
			for i := 1; i < len(rs.Rules); i++ {
				if rs.Rules[i-1].Path >= rs.Rules[i].Path {
					t.Errorf("rules not sorted: %s before %s", rs.Rules[i-1].Path, rs.Rules[i].Path)
				}
			}
			for _, r := range rs.Rules {
				if !r.Dir && r.Access&^fileRights != 0 {
					t.Errorf("file rule %s has %s", r.Path, AccessString(r.Access))
				}
			}
			notes := strings.Join(rs.Notes, "\n")
			for _, n := range c.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
			// The plan is deterministic.
			again, err := RulesetFor(p, abi)
			if err != nil || len(again.Rules) != len(rs.Rules) {
				t.Fatalf("second plan differs: %v", err)
			}
			for i := range again.Rules {
				if again.Rules[i] != rs.Rules[i] {
					t.Errorf("second plan differs at %v / %v", again.Rules[i], rs.Rules[i])
				}
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	root := tree(t, "")
	cases := []struct {
		name string
		abi  int
		edit func(p *policy.Policy)
		want string
	}{
		{"deny", 7, func(p *policy.Policy) {
			p.Deny = []policy.DenyRule{{Entry: "**/.env", Prefix: root, Rest: "**/.env", Source: "sandbox.toml"}}
		}, "deny needs bubblewrap"},
		{"no landlock", 0, nil, "install bubblewrap"},
		{"hook protection below ABI 3", 2, nil, "needs Landlock ABI 3"},
		{"protected path missing", 7, func(p *policy.Policy) {
			p.Protected = append(p.Protected, filepath.Join(root, "ws/gone/x"))
		}, root + "/ws/gone/x"},
		{"symlink in a grant", 7, func(p *policy.Policy) {
			p.Grants = append(p.Grants, policy.Grant{Path: filepath.Join(root, "ws/link"), Access: policy.Write})
		}, "symlink"},
		{"off", 7, func(p *policy.Policy) { p.Enforce = false }, "enforces nothing"},
		{"darwin", 7, func(p *policy.Policy) { p.Target = "darwin" }, "Linux only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testPolicy(root, polOpts{})
			if c.edit != nil {
				c.edit(p)
			}
			rs, err := RulesetFor(p, c.abi)
			if err == nil {
				t.Fatalf("planned %d rules, want a refusal", len(rs.Rules))
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line with %q", err, c.want)
			}
		})
	}
}

// TestCheck: the self-check refuses a ruleset that would let a protected
// path be written or moved.
func TestCheck(t *testing.T) {
	root := tree(t, "")
	p := testPolicy(root, polOpts{})
	rs, err := RulesetFor(p, 7)
	if err != nil {
		t.Fatal(err)
	}
	bad := *rs
	bad.Rules = append([]Rule{}, rs.Rules...)
	for i, r := range bad.Rules {
		if r.Path == filepath.Join(root, "gh") {
			bad.Rules[i].Access |= accessRemoveFile
		}
	}
	if err := bad.check(p, p.Layers()); err == nil || !strings.Contains(err.Error(), "hooks") {
		t.Errorf("check: %v", err)
	}
}

func TestABISets(t *testing.T) {
	root := tree(t, "")
	cases := []struct {
		abi              int
		isolate          bool
		has, lacks       uint64
		scoped           uint64
		protectedAllowed bool
	}{
		{1, false, accessMakeSym | accessExecute, accessRefer | accessTruncate | accessIoctlDev, 0, false},
		{2, false, accessRefer, accessTruncate | accessIoctlDev, 0, false},
		{3, false, accessRefer | accessTruncate, accessIoctlDev, 0, true},
		{4, true, accessTruncate, accessIoctlDev, 0, true},
		{5, true, accessIoctlDev, accessResolveUnix, 0, true},
		{6, false, accessIoctlDev, accessResolveUnix, scopeSignal, true},
		{6, true, accessIoctlDev, accessResolveUnix, scopeSignal | scopeAbstractUnixSocket, true},
		{7, false, accessIoctlDev, accessResolveUnix, scopeSignal, true},
		{9, false, accessIoctlDev, accessResolveUnix, scopeSignal, true},
	}
	for _, c := range cases {
		p := testPolicy(root, polOpts{noHooks: !c.protectedAllowed, isolate: c.isolate})
		rs, err := RulesetFor(p, c.abi)
		if err != nil {
			t.Fatalf("ABI %d: %v", c.abi, err)
		}
		if rs.Handled&c.has != c.has || rs.Handled&c.lacks != 0 || rs.Scoped != c.scoped || rs.ABI != c.abi {
			t.Errorf("ABI %d: handled %s scoped %#x", c.abi, AccessString(rs.Handled), rs.Scoped)
		}
		for _, r := range rs.Rules {
			if r.Access&^rs.Handled != 0 {
				t.Errorf("ABI %d: rule %s asks for %s", c.abi, r.Path, AccessString(r.Access&^rs.Handled))
			}
		}
	}
}

func TestAccessString(t *testing.T) {
	for a, want := range map[uint64]string{
		0:                                "none",
		readRights:                       "execute|read_file|read_dir",
		accessTruncate | accessIoctlDev:  "truncate|ioctl_dev",
		accessResolveUnix | 1<<20:        "resolve_unix|0x100000",
		accessWriteFile | accessMakeReg:  "write_file|make_reg",
		accessRemoveDir | accessMakeFifo: "remove_dir|make_fifo",
	} {
		if got := AccessString(a); got != want {
			t.Errorf("AccessString(%#x) = %q, want %q", a, got, want)
		}
	}
}
