// Command grok-sandbox runs a command inside an OS sandbox chosen by a named
// profile: bubblewrap on Linux, Seatbelt on macOS. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/urfave/cli/v2"

	"grok-sandbox/launcher"
)

func main() {
	os.Exit(run(os.Args))
}

// run is main without the exit, so tests can register it as a command.
func run(args []string) int {
	// grok-sandbox's own stage inside the sandbox: its arguments after
	// "--" are the wrapped command's and must never meet a flag parser.
	if len(args) > 1 && args[1] == launcher.InitCommand {
		return launcher.RunInit(args[2:])
	}
	app := newApp()
	if err := app.Run(args); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "grok-sandbox: "+launcher.Printable(msg))
		}
		return launcher.Code(err)
	}
	return 0
}

func newApp() *cli.App {
	profile := &cli.StringFlag{Name: "profile", Aliases: []string{"sandbox"}, Usage: "the sandbox profile (default: $GROK_SANDBOX, then [sandbox] profile in config.toml, then off)"}
	workspace := &cli.StringFlag{Name: "workspace", Usage: "the workspace directory (default: the current directory)"}
	targetFlag := &cli.StringFlag{Name: "target", Value: runtime.GOOS, Usage: "render for `linux` or `darwin`"}
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "one JSON document, for tools"}
	isolate := &cli.BoolFlag{Name: "isolate-network", Usage: "no network for the wrapped command either"}

	app := &cli.App{
		Name:                      "grok-sandbox",
		Usage:                     "run a command inside an OS sandbox chosen by a named profile",
		HideHelpCommand:           true,
		DisableSliceFlagSeparator: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return err
		},
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			{
				Name:      "run",
				Usage:     "run COMMAND inside the sandbox (exec: no resident parent)",
				ArgsUsage: "[--] COMMAND [ARG...]",
				Flags:     []cli.Flag{profile, workspace, isolate, &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say which profile and backend are used"}},
				Action: func(c *cli.Context) error {
					inv := invocation(c, runtime.GOOS)
					inv.Verbose = c.Bool("verbose")
					return launcher.Run(inv)
				},
			},
			{
				Name:      "print",
				Usage:     "print exactly what run would exec, one argument per line",
				ArgsUsage: "[--] COMMAND [ARG...]",
				Flags:     []cli.Flag{profile, workspace, targetFlag, jsonFlag, isolate},
				Action: func(c *cli.Context) error {
					return launcher.Print(invocation(c, c.String("target")), c.Bool("json"), c.App.Writer)
				},
			},
			{
				Name:  "explain",
				Usage: "describe the resolved capability set for people",
				Flags: []cli.Flag{profile, workspace, targetFlag, jsonFlag, isolate},
				Action: func(c *cli.Context) error {
					return launcher.Explain(invocation(c, c.String("target")), c.Bool("json"), c.App.Writer)
				},
			},
			{
				Name:  "profiles",
				Usage: "list every profile: name, where it is defined, what it extends",
				Flags: []cli.Flag{workspace},
				Action: func(c *cli.Context) error {
					return launcher.Profiles(invocation(c, runtime.GOOS), c.App.Writer)
				},
			},
			{
				Name:  "doctor",
				Usage: "platform support, backend availability, config files, conflicts and how to fix them",
				Flags: []cli.Flag{workspace},
				Action: func(c *cli.Context) error {
					return launcher.Doctor(invocation(c, runtime.GOOS), c.App.Writer)
				},
			},
			{
				Name:  "status",
				Usage: "inside a sandbox: the profile and backend in force, checked against the kernel; outside: not sandboxed",
				Action: func(c *cli.Context) error {
					return launcher.Status(c.App.Writer)
				},
			},
			{
				Name:  "check",
				Usage: "validate every config file; non-zero exit on any error",
				Flags: []cli.Flag{workspace},
				Action: func(c *cli.Context) error {
					return launcher.Check(invocation(c, runtime.GOOS), c.App.Writer)
				},
			},
		},
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Len() > 0 {
			return &launcher.ExitError{Code: launcher.ExitRefused, Err: errors.New("unknown command " + c.Args().First() + "; run `grok-sandbox --help`")}
		}
		return cli.ShowAppHelp(c)
	}
	return app
}

// invocation collects what every command needs from the flags and the
// environment. The profile comes from --profile/--sandbox, else GROK_SANDBOX.
func invocation(c *cli.Context, target string) launcher.Invocation {
	req := launcher.Request{
		Workspace:      c.String("workspace"),
		Target:         target,
		IsolateNetwork: c.Bool("isolate-network"),
		Environ:        os.Environ(),
	}
	// A flag or variable that is set but empty is kept as asked-for, so
	// that Select refuses it instead of falling through to off.
	if c.IsSet("profile") {
		req.Profile, req.ProfileFrom = c.String("profile"), "--profile"
	} else if v, ok := os.LookupEnv("GROK_SANDBOX"); ok {
		req.Profile, req.ProfileFrom = v, "GROK_SANDBOX"
	}
	return launcher.Invocation{Request: req, Command: c.Args().Slice(), Stderr: c.App.ErrWriter}
}
