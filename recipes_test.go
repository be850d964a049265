package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"grok-sandbox/launcher/help"
)

// TestRecipesAreTheTestedOnes keeps the toolchain recipes of `grok-sandbox
// help recipes` and the scripts that run them from drifting apart: the
// topic explain's tool-cache line points at exists, and its sandbox.toml
// and config.toml are the files every testdata/enforce/recipe_* script
// installs (comments aside; the scripts without Go leave out the Go line,
// as the topic says to).
func TestRecipesAreTheTestedOnes(t *testing.T) {
	section, ok := help.Source("recipes")
	if !ok {
		t.Fatal(`there is no help topic "recipes" (explain's tool-cache line points there)`)
	}
	if !strings.HasPrefix(section, "# Toolchain recipes\n") {
		t.Fatalf("the recipes topic does not start with its title, # Toolchain recipes: %.40q", section)
	}
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) != 2 {
		t.Fatalf("the recipes topic has %d toml blocks, want 2 (sandbox.toml, config.toml)", len(blocks))
	}
	want := map[string]string{"sandbox.toml": normTOML(blocks[0][1]), "config.toml": normTOML(blocks[1][1])}

	scripts, err := filepath.Glob("testdata/enforce/recipe_*.txtar")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no recipe scripts: %v", err)
	}
	for _, script := range scripts {
		a, err := txtar.ParseFile(script)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		for _, f := range a.Files {
			files[f.Name] = normTOML(string(f.Data))
		}
		if _, ok := files["sandbox.toml"]; !ok {
			continue // the recipe needs no custom profile (cargo)
		}
		for name, w := range want {
			got, ok := files[name]
			if !ok {
				t.Errorf("%s: has sandbox.toml but no %s", script, name)
				continue
			}
			if name == "sandbox.toml" && !strings.Contains(got, "~/go/pkg/mod") {
				w = withoutLines(w, "~/go/pkg/mod")
			}
			if got != w {
				t.Errorf("%s: %s differs from the recipes topic's:\n--- topic\n%s--- script\n%s", script, name, w, got)
			}
		}
	}
}

// normTOML drops comments, trailing blanks and blank lines.
func normTOML(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimRight(line, " \t")
		if line != "" {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func withoutLines(s, mention string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.Contains(line, mention) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// [tool:NAME] skips for a missing tool outside CI and fails the run in CI.
func TestSystemToolMissingFailsInCI(t *testing.T) {
	t.Setenv("CI", "")
	if ok, err := systemTool("grok-sandbox-no-such-tool"); ok || err != nil {
		t.Errorf("outside CI: got %v, %v; want false, nil (skip)", ok, err)
	}
	t.Setenv("CI", "true")
	if _, err := systemTool("grok-sandbox-no-such-tool"); err == nil {
		t.Error("in CI: a missing tool does not fail the run")
	}
	if ok, err := systemTool("sh"); !ok || err != nil {
		t.Errorf("sh: got %v, %v; want true, nil", ok, err)
	}
}
