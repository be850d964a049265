//go:build urfave_cli_no_docs

package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"grok-sandbox/launcher"
)

// manCommand, in a build without the docs generator, says where the page
// comes from instead.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print the man page (not in this build: see below)",
		Action: func(c *cli.Context) error {
			return &launcher.ExitError{Code: launcher.ExitRefused, Err: errors.New("man: this binary was built with -tags urfave_cli_no_docs, without the man page generator; run `go run . man > grok-sandbox.1` in the source tree")}
		},
	}
}
