package agents

import (
	"slices"
	"testing"
)

func TestRecognise(t *testing.T) {
	for _, tc := range []struct {
		exe, name, root string
		native          bool
	}{
		{"/usr/lib/node_modules/@openai/codex/bin/codex.js", "codex", "/usr/lib/node_modules/@openai/codex", false},
		{"/home/u/.npm-global/lib/node_modules/@vibe-kit/grok-cli/dist/index.js", "grok", "/home/u/.npm-global/lib/node_modules/@vibe-kit/grok-cli", false},
		{"/usr/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "codex", "/usr/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin", true},
		{"/home/u/.local/share/claude/versions/2.1.0", "claude", "/home/u/.local/share/claude/versions", true},
		{"/usr/lib/node_modules/@google/gemini-cli/dist/index.js", "gemini", "/usr/lib/node_modules/@google/gemini-cli", false},
		{"/home/u/.opencode/bin/opencode", "opencode", "/home/u/.opencode/bin", true},
	} {
		m, ok := Recognise(tc.exe)
		if !ok || m.Agent.Name != tc.name || m.Root != tc.root || m.Native != tc.native {
			t.Errorf("Recognise(%s) = %+v %v, want %s at %s (native %v)", tc.exe, m, ok, tc.name, tc.root, tc.native)
		}
	}
	// By the resolved file, never by a name alone.
	for _, exe := range []string{"/usr/bin/codex", "/home/u/bin/claude", "/usr/lib/node_modules/codex-wrapper/bin/codex.js", "/usr/lib/node_modules/@openai/codexx/bin/x.js"} {
		if m, ok := Recognise(exe); ok {
			t.Errorf("Recognise(%s) = %s, want nothing", exe, m.Agent.Name)
		}
	}
}

func TestProgramGlobs(t *testing.T) {
	m, _ := Recognise("/p/lib/node_modules/@openai/codex/bin/codex.js")
	g := m.ProgramGlobs()
	if !slices.Contains(g, "/p/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-*/vendor/*/bin/codex") ||
		!slices.Contains(g, "/p/lib/node_modules/@openai/codex-linux-*/vendor/*/bin/codex") {
		t.Errorf("globs %q", g)
	}
	if n, _ := Recognise("/p/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/t/bin/codex"); n.ProgramGlobs() != nil {
		t.Errorf("a native match has program globs")
	}
}

func TestStatePathsAndProtected(t *testing.T) {
	a, _ := ByName("codex")
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if s := a.StatePaths("/home/u", get); len(s) != 1 || s[0].Path != "/home/u/.codex" {
		t.Fatalf("state %+v", s)
	}
	env["CODEX_HOME"] = "/data/codex"
	s := a.StatePaths("/home/u", get)
	if s[0].Path != "/data/codex" {
		t.Fatalf("CODEX_HOME ignored: %+v", s)
	}
	if p := a.ProtectedPaths(s); len(p) != 3 || p[0].Path != "/data/codex/config.toml" || p[0].Dir || p[1].Path != "/data/codex/rules" || !p[1].Dir {
		t.Fatalf("protected %+v", p)
	}
	env["CODEX_HOME"] = "relative"
	if s := a.StatePaths("/home/u", get); s[0].Path != "/home/u/.codex" {
		t.Fatalf("a relative CODEX_HOME was taken: %+v", s)
	}
}

// Every protected file lies in a state entry, and names are unique.
func TestTableShape(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Table {
		if seen[a.Name] || a.Name == "none" || a.Name == "" {
			t.Errorf("bad or duplicate name %q", a.Name)
		}
		seen[a.Name] = true
		for _, p := range a.Protected {
			if p.In >= len(a.State) || a.State[p.In].File {
				t.Errorf("%s: protected %s is not in a state directory", a.Name, p.Path)
			}
		}
	}
}
