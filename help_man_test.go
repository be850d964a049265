//go:build !urfave_cli_no_docs

package main

import (
	"regexp"
	"strings"
	"testing"

	"grok-sandbox/launcher/help"
)

// code is markdown's inline code, which the page writes in bold.
var code = regexp.MustCompile("`([^`]*)`")

// TestManHoldsEveryTopic: the man page is urfave/cli's page of the
// commands, then one section a topic, with each of the topic's headings.
func TestManHoldsEveryTopic(t *testing.T) {
	page, err := runApp(t, "man")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH grok-sandbox 1\n", ".SH NAME\n", ".SH COMMANDS\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("the man page has no %q", want)
		}
	}
	for _, c := range newApp().Commands {
		if !strings.Contains(page, "\n.SH "+c.Name+"\n") {
			t.Errorf("the man page has no section for the command %s", c.Name)
		}
	}
	for _, tp := range help.Topics() {
		text, _ := help.Text(tp.Name)
		title, _, _ := strings.Cut(strings.TrimPrefix(text, "# "), "\n")
		if want := ".SH " + strings.ToUpper(title) + " (grok-sandbox help " + tp.Name + ")\n"; !strings.Contains(page, want) {
			t.Errorf("the man page has no section %q", want)
		}
		fence := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if h, ok := strings.CutPrefix(line, "## "); ok && !fence && !strings.Contains(page, ".SS "+code.ReplaceAllString(h, `\fB$1\fR`)+"\n") {
				t.Errorf("the man page's section for %s has no heading %q", tp.Name, h)
			}
		}
	}
}
