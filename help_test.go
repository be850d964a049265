package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/help"
)

// runApp runs grok-sandbox's CLI with args, its output in a buffer.
func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"grok-sandbox"}, args...))
	return out.String(), err
}

// TestHelpTopics: every topic prints (as it is when standard output is
// not a terminal), is listed by `grok-sandbox help`, is linked from the
// README and is offered after help by every completion script.
func TestHelpTopics(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	list, err := runApp(t, "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range help.Topics() {
		want, _ := help.Text(tp.Name)
		got, err := runApp(t, "help", tp.Name)
		if err != nil || got != want {
			t.Errorf("help %s: %v, and the output is not the topic: %.60q", tp.Name, err, got)
		}
		if !strings.Contains(list, "\n   "+tp.Name+" ") {
			t.Errorf("grok-sandbox help does not list %s:\n%s", tp.Name, list)
		}
		link := "](launcher/help/topics/" + tp.Name + ".md)"
		if !bytes.Contains(readme, []byte(link)) || !bytes.Contains(readme, []byte("`grok-sandbox help "+tp.Name+"`")) {
			t.Errorf("README.md does not link topic %s (%s) and name `grok-sandbox help %s`", tp.Name, link, tp.Name)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		script, err := runApp(t, "completion", shell)
		if err != nil || !strings.Contains(script, help.Names()) || strings.Contains(script, "@TOPICS@") {
			t.Errorf("the %s completion (%v) does not offer the topics (%s) after help", shell, err, help.Names())
		}
	}
}

// TestHelpArguments: help alone is --help; help COMMAND is COMMAND --help;
// anything else is refused in one line.
func TestHelpArguments(t *testing.T) {
	app, err := runApp(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := runApp(t, "help"); got != app {
		t.Errorf("help differs from --help:\n%s\n---\n%s", got, app)
	}
	if !strings.Contains(app, "HELP TOPICS (grok-sandbox help TOPIC):") {
		t.Errorf("--help lists no help topics:\n%s", app)
	}
	runHelp, err := runApp(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := runApp(t, "help", "run"); got != runHelp {
		t.Errorf("help run differs from run --help:\n%s\n---\n%s", got, runHelp)
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "network", "deny"}} {
		_, err := runApp(t, args...)
		if launcher.Code(err) != launcher.ExitRefused || err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v (exit %d), want one line and exit %d", args, err, launcher.Code(err), launcher.ExitRefused)
		}
	}
}
