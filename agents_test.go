//go:build linux

package main

// TestAgents runs real agent CLIs from npm (testdata/agents) under every
// profile, as root and as uid 65534, each against netprobe mockllm (a
// scripted model API on 127.0.0.1, probe_llm_test.go): issue 14's "Tests".

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// agentPackages are the pinned agent CLIs: npm package, version, and the
// program it installs in PREFIX/bin.
var agentPackages = []struct{ pkg, version, bin string }{
	{"@vibe-kit/grok-cli", "0.0.34", "grok"},
	{"@openai/codex", "0.169.0", "codex"},
	{"@anthropic-ai/claude-code", "2.1.332", "claude"},
	{"@google/gemini-cli", "0.61.0", "gemini"},
	{"opencode-ai", "1.18.33", "opencode"},
}

// codexNative is the native program Codex's node launcher (bin/codex.js)
// spawns as a child, relative to the prefix.
const codexNative = "lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

func TestAgents(t *testing.T) {
	if !bwrapWorks() {
		t.Skip("bubblewrap cannot make a sandbox here")
	}
	prefix := installAgents(t)
	withAgents := func(p testscript.Params) testscript.Params {
		setup := p.Setup
		p.Setup = func(env *testscript.Env) error {
			if err := setup(env); err != nil {
				return err
			}
			env.Setenv("AGENTS", prefix)
			for _, a := range agentPackages {
				env.Setenv(strings.ToUpper(a.bin)+"_BIN", filepath.Join(prefix, "bin", a.bin))
			}
			env.Setenv("CODEX_NATIVE", filepath.Join(prefix, codexNative))
			return nil
		}
		return p
	}
	t.Run("root", func(t *testing.T) {
		testscript.Run(t, withAgents(params(t, "testdata/agents", false)))
	})
	t.Run("asuser", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("not root: the root pass already ran as an unprivileged user")
		}
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("setpriv (util-linux) is missing")
		}
		testscript.Run(t, withAgents(params(t, "testdata/agents", true)))
	})
}

// installAgents returns an npm prefix holding agentPackages, installing them
// when missing. GROK_SANDBOX_AGENTS_PREFIX names an existing install instead.
// The default prefix is under /usr/local (root) or the user's cache
// directory: outside the temporary directories (which every profile
// writes), and, for root, where strict exposes it, as it would a
// `sudo npm install -g`. It is cached by the pinned versions. When the
// registry cannot be reached the test skips, and fails in CI.
func installAgents(t *testing.T) string {
	unavailable := func(format string, a ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, a...)
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: the agent CLIs are needed: %s", msg)
		}
		t.Skipf("SKIPPED, not passed: %s (set GROK_SANDBOX_AGENTS_PREFIX to an npm prefix holding %s)", msg, pinnedList())
	}
	if p := os.Getenv("GROK_SANDBOX_AGENTS_PREFIX"); p != "" {
		if err := agentsInstalled(p); err != nil {
			t.Fatalf("GROK_SANDBOX_AGENTS_PREFIX=%s: %v", p, err)
		}
		return p
	}
	base := "/usr/local/lib/grok-sandbox-tests/agents"
	if os.Geteuid() != 0 {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		base = filepath.Join(cache, "grok-sandbox-tests", "agents")
	}
	var key []string
	for _, a := range agentPackages {
		key = append(key, strings.TrimPrefix(filepath.Base(a.pkg), "@")+"-"+a.version)
	}
	prefix := filepath.Join(base, strings.Join(key, "+"))
	if agentsInstalled(prefix) == nil {
		return prefix
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("npm is not installed")
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable("node is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	out, err := exec.CommandContext(ctx, npm, "ping", "--fetch-retries=1", "--fetch-timeout=10000").CombinedOutput()
	cancel()
	if err != nil {
		unavailable("the npm registry is unreachable: npm ping: %v: %s", err, lastLines(out, 5))
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(base, ".installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	args := []string{"install", "--global", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error"}
	for _, a := range agentPackages {
		args = append(args, a.pkg+"@"+a.version)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	// npm's own cache stays out of the way of the user's.
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(base, ".npm-cache"), "npm_config_update_notifier=false")
	t.Logf("installing %s into %s", pinnedList(), prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, lastLines(out, 30))
	}
	// uid 65534 runs them too.
	if out, err := exec.Command("chmod", "-R", "a+rX,go-w", tmp).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	if err := agentsInstalled(tmp); err != nil {
		t.Fatalf("after npm install: %v", err)
	}
	os.RemoveAll(prefix)
	if err := os.Rename(tmp, prefix); err != nil {
		t.Fatal(err)
	}
	for d := prefix; d != "/"; d = filepath.Dir(d) {
		if d == base || strings.HasPrefix(d, base+"/") {
			os.Chmod(d, 0o755)
		}
	}
	return prefix
}

// agentsInstalled checks that prefix holds the pinned versions, the native
// Codex program included.
func agentsInstalled(prefix string) error {
	for _, a := range agentPackages {
		if _, err := os.Stat(filepath.Join(prefix, "bin", a.bin)); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(prefix, "lib/node_modules", a.pkg, "package.json"))
		if err != nil {
			return err
		}
		var pj struct{ Version string }
		if err := json.Unmarshal(b, &pj); err != nil {
			return fmt.Errorf("%s: %v", a.pkg, err)
		}
		if pj.Version != a.version {
			return fmt.Errorf("%s is %s, want %s", a.pkg, pj.Version, a.version)
		}
	}
	_, err := os.Stat(filepath.Join(prefix, codexNative))
	return err
}

func pinnedList() string {
	var s []string
	for _, a := range agentPackages {
		s = append(s, a.pkg+"@"+a.version)
	}
	return strings.Join(s, " ")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
