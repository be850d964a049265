//go:build !urfave_cli_no_docs

package main

import (
	"fmt"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"

	"grok-sandbox/launcher/help"
)

// manCommand prints the man page, generated from the same definitions as
// --help, with every help topic after the commands. Builds with the
// urfave_cli_no_docs tag (which keeps every launch from paying for the
// generator) leave the command out.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print the man page (roff): grok-sandbox man > grok-sandbox.1",
		Action: func(c *cli.Context) error {
			page, err := manPage(c.App)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	}
}

// manPage is the roff of section 1: urfave/cli's markdown of the app (what
// ToManWithSection(1) renders), then one section a help topic.
func manPage(app *cli.App) (string, error) {
	md, err := app.ToMarkdown()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%% %s 1\n\n%s\n", app.Name, md)
	for _, t := range help.Topics() {
		text, _ := help.Text(t.Name)
		b.WriteString(manSection(t.Name, text))
	}
	return string(md2man.Render([]byte(b.String()))), nil
}

// manSection makes a topic one section of the page: its title, upper-cased
// as man sections are, names the topic, and every heading below goes one
// level down (outside code blocks).
func manSection(name, text string) string {
	var b strings.Builder
	fence := false
	for i, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		switch {
		case i == 0 && strings.HasPrefix(line, "# "):
			fmt.Fprintf(&b, "# %s (grok-sandbox help %s)\n", strings.ToUpper(strings.TrimSpace(line[2:])), name)
		case !fence && strings.HasPrefix(line, "#"):
			b.WriteString("#" + line)
		default:
			b.WriteString(line)
		}
	}
	return b.String() + "\n"
}
