// Package agents is the table of agent CLIs grok-sandbox knows, and how it
// recognises one from the executable a command resolves to.
//
// It decides nothing about access by itself: resolution turns a recognised
// agent's state into grants (writable under every enforcing profile, exposed
// under strict) and its configuration files into protected paths, and the
// init stage gives the network of the wrapped command to the agent's real
// program when the command is only its launcher. Everything here is data and
// pure functions of paths, so that the table is in one place and tested.
package agents

import (
	"path/filepath"
	"sort"
	"strings"
)

// Agent is one agent CLI.
type Agent struct {
	// Name is what --agent takes and explain prints.
	Name string
	// Title is the product's name, for people.
	Title string
	// Package is the npm package whose files the command resolves into
	// (the agent's launcher script or binary), "" when it has none.
	Package string
	// Native are path fragments of native installs (a resolved executable
	// whose path contains one is this agent).
	Native []string
	// Program are globs, relative to the package's directory, naming the
	// program that is the real agent when the package's executable is only
	// a launcher that starts it as a child (Codex's node script starts a
	// native binary). Empty: the command itself is the agent.
	Program []string
	// State are the files and directories the agent must write: its home
	// and session stores. "~" is the home directory.
	State []State
	// Protected are the files in State that configure the agent's hooks,
	// permissions, MCP servers, sandboxing or API endpoint: read-only
	// inside, so the agent cannot widen its next run. Missing ones are
	// created with Initial content, so that their absence cannot be used.
	Protected []Protected
	// Env is set in the agent's environment under every enforcing
	// profile: what the agent needs to know that it is sandboxed (Claude
	// Code refuses to skip its permission prompts as root unless told it
	// is in a sandbox).
	Env map[string]string
	// Mirror, when set, is a state file that the agent rewrites through a
	// lock and a temporary file beside it (Claude Code's ~/.claude.json):
	// where the profile does not write the file's directory, the agent
	// is pointed (by Mirror.Env) at a copy in a state directory it writes,
	// kept in step with the original at every launch.
	Mirror *Mirror
}

// Mirror is Agent.Mirror.
type Mirror struct {
	// File and Dir index State: the file mirrored, and the directory
	// whose copy of it (same name) the agent uses inside.
	File, Dir int
	// Env points the agent at Dir (and so at the copy); when the user has
	// set it already, the file lives in that directory and needs no copy.
	Env string
}

// State is a path the agent writes.
type State struct {
	Path string // "~/.codex"
	// Env names a variable that, when set in the command's environment,
	// replaces Path (CODEX_HOME).
	Env string
	// File is true for a file (Claude Code's ~/.claude.json), false for a
	// directory.
	File bool
}

// Protected is a configuration file (or directory) of the agent.
type Protected struct {
	// Path is relative to the State entry at index In ("config.toml").
	Path    string
	In      int
	Initial string
	// Dir: a directory whose files the agent loads (Codex's rules/,
	// opencode's plugin/): created empty when missing.
	Dir bool
}

// Table is every agent grok-sandbox recognises, by name.
var Table = []Agent{
	{
		Name: "claude", Title: "Claude Code", Package: "@anthropic-ai/claude-code",
		Native:  []string{"/.local/share/claude/versions/", "/.claude/local/"},
		Program: []string{"../claude-code-linux-*/claude", "node_modules/@anthropic-ai/claude-code-linux-*/claude"},
		State: []State{
			{Path: "~/.claude", Env: "CLAUDE_CONFIG_DIR"},
			{Path: "~/.claude.json", File: true},
		},
		Protected: []Protected{
			{Path: "settings.json", In: 0, Initial: "{}\n"},
			{Path: "plugins", In: 0, Dir: true},
		},
		Env:    map[string]string{"IS_SANDBOX": "1"},
		Mirror: &Mirror{File: 1, Dir: 0, Env: "CLAUDE_CONFIG_DIR"},
	},
	{
		Name: "codex", Title: "Codex CLI", Package: "@openai/codex",
		Native: []string{"/@openai/codex-linux-x64/vendor/", "/@openai/codex-linux-arm64/vendor/"},
		Program: []string{
			"node_modules/@openai/codex-linux-*/vendor/*/bin/codex",
			"../codex-linux-*/vendor/*/bin/codex",
			"vendor/*/bin/codex",
		},
		State: []State{{Path: "~/.codex", Env: "CODEX_HOME"}},
		Protected: []Protected{
			{Path: "config.toml", In: 0, Initial: ""},
			// Which commands run outside Codex's own sandbox unasked.
			{Path: "rules", In: 0, Dir: true},
			{Path: "plugins", In: 0, Dir: true},
		},
	},
	{
		Name: "gemini", Title: "Gemini CLI", Package: "@google/gemini-cli",
		State: []State{{Path: "~/.gemini"}},
		// gemini.js otherwise restarts itself as a second node process
		// (for a larger heap), which, as a child of the command, would
		// lose the network under restrict_network; node is the command's
		// own program, so no Program rule could tell that child from a
		// tool's node.
		Env: map[string]string{"GEMINI_CLI_NO_RELAUNCH": "true"},
		Protected: []Protected{
			{Path: "settings.json", In: 0, Initial: "{}\n"},
			{Path: "extensions", In: 0, Dir: true},
		},
	},
	{
		Name: "grok", Title: "grok-cli", Package: "@vibe-kit/grok-cli",
		// ~/.grok is GROK_HOME's default: granted and protected already
		// when it is; the settings file holds the API endpoint.
		State:     []State{{Path: "~/.grok"}},
		Protected: []Protected{{Path: "user-settings.json", In: 0, Initial: "{\n  \"settingsVersion\": 2\n}\n"}},
	},
	{
		Name: "opencode", Title: "opencode", Package: "opencode-ai",
		Native: []string{"/.opencode/bin/"},
		Program: []string{
			"node_modules/opencode-linux-*/bin/opencode",
			"../opencode-linux-*/bin/opencode",
		},
		// opencode (a Bun program) writes the native libraries it embeds
		// to $TMPDIR and loads them from there by name; in the host's /tmp
		// (or any directory another sandbox writes) a process of another
		// sandbox could swap one between the write and the load, and its
		// code would run in the process that keeps the network. The
		// sandbox's own /dev/shm is fresh, private to this sandbox, and
		// gone at its exit.
		Env: map[string]string{"BUN_TMPDIR": "/dev/shm"},
		State: []State{
			{Path: "~/.config/opencode", Env: "OPENCODE_CONFIG_DIR"},
			{Path: "~/.local/share/opencode"},
			{Path: "~/.local/state/opencode"},
			{Path: "~/.cache/opencode"},
		},
		Protected: []Protected{
			{Path: "opencode.json", In: 0, Initial: "{}\n"},
			{Path: "opencode.jsonc", In: 0, Initial: "{}\n"},
			{Path: "config.json", In: 0, Initial: "{}\n"},
			// Plugins run inside opencode's own process.
			{Path: "plugin", In: 0, Dir: true},
			{Path: "plugins", In: 0, Dir: true},
		},
	},
}

// ByName is the agent called name, if the table has one.
func ByName(name string) (Agent, bool) {
	for _, a := range Table {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// Names lists the table's names, sorted.
func Names() []string {
	var n []string
	for _, a := range Table {
		n = append(n, a.Name)
	}
	sort.Strings(n)
	return n
}

// Match is an agent recognised from an executable.
type Match struct {
	Agent Agent
	// Root is the package's directory (where its package.json is), or the
	// executable's directory for a native install.
	Root string
	// Native is true when the executable itself is the agent's program.
	Native bool
}

// Recognise says which agent, if any, the canonical executable path real
// (every link resolved) belongs to: a file inside the agent's npm package
// (node_modules/PACKAGE/...) or a native install.
func Recognise(real string) (Match, bool) {
	// Native installs first: an npm package may hold the native binary
	// (Codex's sits under @openai/codex/node_modules/).
	for _, a := range Table {
		for _, n := range a.Native {
			if strings.Contains(real, n) {
				return Match{Agent: a, Root: filepath.Dir(real), Native: true}, true
			}
		}
	}
	for _, a := range Table {
		if a.Package != "" {
			seg := "/node_modules/" + a.Package + "/"
			if i := strings.LastIndex(real, seg); i >= 0 {
				return Match{Agent: a, Root: real[:i+len(seg)-1]}, true
			}
		}
	}
	return Match{}, false
}

// ProgramGlobs are the absolute globs that may name the agent's real
// program for this match; none when the executable is the program.
func (m Match) ProgramGlobs() []string {
	if m.Native {
		return nil
	}
	var g []string
	for _, p := range m.Agent.Program {
		g = append(g, filepath.Clean(filepath.Join(m.Root, p)))
	}
	return g
}

// StatePaths are the agent's state paths with home and env applied:
// getenv gives the command's environment.
func (a Agent) StatePaths(home string, getenv func(string) string) []State {
	var out []State
	for _, s := range a.State {
		p := s.Path
		if s.Env != "" {
			if v := getenv(s.Env); v != "" && filepath.IsAbs(v) {
				p = v
			}
		}
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		out = append(out, State{Path: filepath.Clean(p), Env: s.Env, File: s.File})
	}
	return out
}

// ProtectedPaths are the agent's protected files, absolute.
func (a Agent) ProtectedPaths(state []State) []Protected {
	var out []Protected
	for _, p := range a.Protected {
		if p.In < len(state) {
			out = append(out, Protected{Path: filepath.Join(state[p.In].Path, p.Path), In: p.In, Initial: p.Initial, Dir: p.Dir})
		}
	}
	return out
}
