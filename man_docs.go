//go:build !urfave_cli_no_docs

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// manCommand prints the man page, generated from the same definitions as
// --help. Builds with the urfave_cli_no_docs tag (which keeps every launch
// from paying for the generator) leave the command out.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print the man page (roff): grok-sandbox man > grok-sandbox.1",
		Action: func(c *cli.Context) error {
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	}
}
