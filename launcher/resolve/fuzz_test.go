package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/printable"
)

// FuzzLoadConfig feeds arbitrary bytes to the sandbox.toml and config.toml
// parsers and checks that they never panic, and that whatever they accept
// resolves without panicking either: bad input gets an error, never a crash
// or a half-built sandbox.
func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte("[profiles.a]\nextends = \"strict\"\ndeny = [\"**/.env\"]\n"), []byte("[sandbox]\nprofile = \"a\"\n"))
	f.Add([]byte("[profiles.a]\nread_only = [\"/**\", \" x\", \"a[\"]\nrestrict_network = 3\n"), []byte("[shell_environment_policy]\ninherit = \"core\"\nexclude = [\"A*\"]\n"))
	f.Add([]byte("[profiles]\na = 1\n"), []byte("sandbox = 1\n"))
	f.Add([]byte("[profiles.\"x.y\"]\ndeny = [\"[!/]\", \"{a,b}\"]\n"), []byte("[shell_environment_policy]\nset = { A = 1 }\n"))
	// Profile names: built-in look-alikes, white space, control characters,
	// terminal escapes, too long (#13 item 4).
	f.Add([]byte("[profiles.STRICT]\nextends = \"devbox\"\n[profiles.\" strict\"]\n"), []byte(""))
	f.Add([]byte("[profiles.\"off \"]\nextends = \"devbox\"\n"), []byte("[sandbox]\nprofile = \"off \"\n"))
	f.Add([]byte("[profiles.\"a\\nb\"]\n[profiles.\"\\u001b]0;pwned\\u0007\\u001b[2J\"]\nextends = \"devbox\"\n"), []byte(""))
	f.Add([]byte("[profiles."+strings.Repeat("a", 65)+"]\n[profiles.-x]\n[profiles.\"\\u202e\"]\n"), []byte(""))
	// Shapes and lines (#13 item 10): profiles or a profile that is no
	// table, an empty extends, a UTF-16 byte-order mark, entries over
	// several lines, dates, arrays of tables, inline tables.
	f.Add([]byte("profiles = 3\n"), []byte("[shell_environment_policy]\nexclude = [\n\"A[\",\n\"B[\",\n]\n"))
	f.Add([]byte("[profiles]\np = 3\n[[profiles.q]]\n"), []byte("[sandbox]\nprofile = 1979-05-27\n"))
	f.Add([]byte("[profiles.p]\nextends = \"\"\nread_only = [\n  \"/a\",\n  '''b\n[c''',\n  3,\n]\n"), []byte("\xff\xfe[\x00"))
	f.Add([]byte("\xfe\xff\x00p"), []byte(""))
	f.Add([]byte("profiles = { p = { extends = \"strict\", deny = [\"{a,b}\"] } }\n"), []byte(""))
	f.Fuzz(func(t *testing.T, sandbox, general []byte) {
		dir := t.TempDir()
		home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
		grokHome := filepath.Join(home, ".grok")
		for _, d := range []string{grokHome, ws} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(grokHome, "sandbox.toml"), sandbox, 0o644)
		os.WriteFile(filepath.Join(grokHome, "config.toml"), general, 0o644)
		cfg, err := config.Load(grokHome, ws)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, grokHome) || strings.Contains(msg, "\n") {
				t.Fatalf("error does not name the file on one line: %q", msg)
			} else if printable.String(msg) != msg {
				t.Fatalf("error carries control characters: %q", msg)
			}
			return
		}
		for name := range cfg.Profiles {
			if config.CheckProfileName(name) != "" || config.IsBuiltin(name) {
				t.Fatalf("profile name %q accepted", name)
			}
		}
		env := Dirs{Home: home, GrokHome: grokHome, grokHomeAsGiven: grokHome, Workspace: ws, Cwd: ws}
		// A Linux host: the darwin policy is resolved from that
		// platform's fixed rules alone, whatever machine runs this.
		host := Host{OS: "linux", Cwd: ws}
		for name := range cfg.Profiles {
			req := Request{Profile: name, ProfileFrom: "--profile", Target: "darwin", Environ: []string{"HOME=" + home}}
			_, _ = Resolve(req, host, env, cfg, Selection{Name: name, By: "fuzz"})
		}
	})
}
