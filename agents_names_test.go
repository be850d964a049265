package main

import (
	"strings"
	"testing"

	"grok-sandbox/launcher/agents"
)

// The zsh and fish completions list the agent names; they must be the
// table's, plus none.
func TestCompletionsNameEveryAgent(t *testing.T) {
	want := strings.Join(agents.Names(), " ") + " none"
	for _, shell := range []string{"zsh", "fish"} {
		if !strings.Contains(completionScripts[shell], want) {
			t.Errorf("the %s completion does not list the agents %q", shell, want)
		}
	}
}
