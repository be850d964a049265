// Command grok-sandbox runs a command inside an OS sandbox chosen by a named
// profile: bubblewrap on Linux, Seatbelt on macOS. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/launcher/verbs"
)

func main() {
	os.Exit(run(os.Args))
}

// run is main without the exit, so tests can register it as a command.
func run(args []string) int {
	// grok-sandbox's own stage inside the sandbox: its arguments after
	// "--" are the wrapped command's and must never meet a flag parser.
	if len(args) > 1 && args[1] == initcfg.Command {
		return sandboxinit.Run(args[2:])
	}
	app := newApp()
	if err := app.Run(args); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "grok-sandbox: "+printable.String(msg))
		}
		return launcher.Code(err)
	}
	return 0
}

func newApp() *cli.App {
	profile := &cli.StringFlag{Name: "profile", Aliases: []string{"sandbox"}, Usage: "the sandbox profile (default: $GROK_SANDBOX, then [sandbox] profile in config.toml, then off)"}
	workspace := &cli.StringFlag{Name: "workspace", Usage: "the workspace directory (default: the current directory)"}
	targetFlag := &cli.StringFlag{Name: "target", Value: runtime.GOOS, Usage: "the platform to render for: linux or darwin"}
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "one JSON document, for tools", DisableDefaultText: true}
	isolate := &cli.BoolFlag{Name: "isolate-network", Usage: "no network for the wrapped command either", DisableDefaultText: true}
	agentFlag := &cli.StringFlag{Name: "agent", Usage: "the agent CLI the command is (one that grok-sandbox agents lists), or none (default: recognised from the command's executable)"}

	// Only --version: -v is run's --verbose.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and VCS revision", DisableDefaultText: true}
	cli.HelpFlag = &cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}
	app := &cli.App{
		Name:                      "grok-sandbox",
		Usage:                     "run a command inside an OS sandbox chosen by a named profile",
		Description:               helpText,
		Version:                   version(),
		HideHelpCommand:           true,
		CustomAppHelpTemplate:     appHelpTemplate(),
		Flags:                     []cli.Flag{cli.HelpFlag}, // urfave/cli adds --help only to an app without a help command
		DisableSliceFlagSeparator: true,
		OnUsageError:              usageError("grok-sandbox --help", nil),
		ExitErrHandler:            func(*cli.Context, error) {},
		Commands: []*cli.Command{
			{
				Name:        "run",
				Usage:       "run COMMAND inside the sandbox",
				Description: helpText,
				ArgsUsage:   "[--] COMMAND [ARG...]",
				Flags:       []cli.Flag{profile, workspace, isolate, agentFlag, &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say which profile and backend are used", DisableDefaultText: true}},
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
				Flags:     []cli.Flag{profile, workspace, targetFlag, jsonFlag, isolate, agentFlag},
				Action: func(c *cli.Context) error {
					return verbs.Print(invocation(c, c.String("target")), c.Bool("json"), c.App.Writer)
				},
			},
			{
				Name:      "explain",
				Usage:     "describe the resolved capability set for people",
				ArgsUsage: "[-- COMMAND [ARG...]]",
				Flags:     []cli.Flag{profile, workspace, targetFlag, jsonFlag, isolate, agentFlag},
				Action: func(c *cli.Context) error {
					if err := profileTakenForCommand(c); err != nil {
						return err
					}
					return verbs.Explain(invocation(c, c.String("target")), c.Bool("json"), c.App.Writer)
				},
			},
			{
				Name:  "agents",
				Usage: "list the agent CLIs grok-sandbox recognises: their state and protected files",
				Flags: []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return verbs.Agents(c.Bool("json"), c.App.Writer)
				},
			},
			{
				Name:  "profiles",
				Usage: "list every profile: name, where it is defined, what it extends",
				Flags: []cli.Flag{workspace},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return verbs.Profiles(invocation(c, runtime.GOOS), c.App.Writer)
				},
			},
			{
				Name:  "doctor",
				Usage: "platform support, backend availability, config files, conflicts and how to fix them",
				Flags: []cli.Flag{workspace},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return verbs.Doctor(invocation(c, runtime.GOOS), c.App.Writer)
				},
			},
			{
				Name:  "log",
				Usage: "the event log: what the sandbox did and refused, oldest first (the last 50 by default)",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "n", Usage: "the last `N` events", Value: 50},
					&cli.BoolFlag{Name: "all", Usage: "every event", DisableDefaultText: true},
					&cli.BoolFlag{Name: "violations", Usage: "violations only", DisableDefaultText: true},
					&cli.StringFlag{Name: "profile", Usage: "events of profile `NAME` only"},
					&cli.StringFlag{Name: "command", Usage: "events of program `NAME` only (its name or its executable's)"},
					&cli.StringFlag{Name: "since", Usage: "events since `WHEN`: a duration (10m, 2h) or a time (2006-01-02 15:04)"},
					&cli.BoolFlag{Name: "json", Usage: "the matching lines as they are stored", DisableDefaultText: true},
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new events until interrupted", DisableDefaultText: true},
					&cli.BoolFlag{Name: "summary", Usage: "counts by profile, program and operation, and what was refused most", DisableDefaultText: true},
					&cli.BoolFlag{Name: "suggest", Usage: "the allow_hosts entries that would let the refused network attempts through", DisableDefaultText: true},
				},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return verbs.Log(verbs.LogOptions{N: c.Int("n"), All: c.Bool("all"), Violations: c.Bool("violations"),
						Profile: c.String("profile"), Command: c.String("command"), Since: c.String("since"), JSON: c.Bool("json"),
						Follow: c.Bool("follow"), Summary: c.Bool("summary"), Suggest: c.Bool("suggest")}, c.App.Writer)
				},
			},
			{
				Name:  "status",
				Usage: "inside a sandbox: the profile and backend in force, checked against the kernel; outside: not sandboxed",
				Flags: []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return verbs.Status(c.App.Writer, c.Bool("json"))
				},
			},
			{
				Name:      "completion",
				Usage:     "print a shell completion script: bash, zsh or fish",
				ArgsUsage: "bash|zsh|fish",
				Action: func(c *cli.Context) error {
					return completion(c)
				},
			},
			manCommand(),
			helpCommand(),
			{
				Name:      "trust",
				Usage:     "read a project's .grok/sandbox.toml from now on (as it is now); --revoke to stop; outside any sandbox only",
				ArgsUsage: "[DIR]",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "revoke", Usage: "no longer trust the project file", DisableDefaultText: true},
					&cli.BoolFlag{Name: "list", Usage: "list the trusted project files", DisableDefaultText: true},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() > 1 {
						return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("trust takes one directory, not %d words; see `grok-sandbox trust --help`", c.NArg())}
					}
					inv := invocation(c, runtime.GOOS)
					if c.NArg() == 1 {
						inv.Workspace = c.Args().First()
					}
					return verbs.Trust(inv, c.Bool("revoke"), c.Bool("list"), c.App.Writer)
				},
			},
			{
				Name:  "check",
				Usage: "validate every config file; non-zero exit on any error",
				Flags: []cli.Flag{workspace},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return verbs.Check(invocation(c, runtime.GOOS), c.App.Writer)
				},
			},
		},
	}
	for _, cmd := range app.Commands {
		// urfave/cli gives every command a "help" (alias "h") subcommand
		// unless told not to, and would take `run -- help` for it: the
		// wrapped command must never be read as grok-sandbox's own.
		cmd.HideHelpCommand = true
		// A usage error is one line on stderr with a hint; without this
		// the library prints the command's whole help first.
		cmd.OnUsageError = usageError("grok-sandbox "+cmd.Name+" --help", cmd.Flags)
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Len() > 0 {
			return &launcher.ExitError{Code: launcher.ExitRefused, Err: errors.New("unknown command " + c.Args().First() + "; run `grok-sandbox --help`")}
		}
		return cli.ShowAppHelp(c)
	}
	return app
}

// usageError turns a flag parsing error into grok-sandbox's one-line
// refusal, spelling flags the way the help text does and naming the flag
// that was probably meant.
func usageError(help string, flags []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			msg = "unknown flag " + dashes(name)
			if near := nearestFlag(strings.TrimPrefix(name, "-"), flags); near != "" {
				msg += " (did you mean " + dashes(near) + "?)"
			}
		} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
			msg = "flag " + dashes(name) + " needs a value"
		}
		hint := ""
		if strings.HasPrefix(help, "grok-sandbox run") || strings.HasPrefix(help, "grok-sandbox print") || strings.HasPrefix(help, "grok-sandbox explain") {
			hint = " (the command and its own flags go after --)"
		}
		return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("%s; see `%s`%s", msg, help, hint)}
	}
}

func dashes(name string) string {
	name = strings.TrimPrefix(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// nearestFlag is the flag name at most two edits away from name, if any.
func nearestFlag(name string, flags []cli.Flag) string {
	best, bestDist := "", 3
	for _, f := range flags {
		for _, n := range f.Names() {
			if d := config.EditDistance(name, n); d < bestDist && len(n) > 1 {
				best, bestDist = n, d
			}
		}
	}
	return best
}

// noArgs refuses positional arguments for the commands that take none, so
// that `explain strict` is not silently `explain` of the default profile.
func noArgs(c *cli.Context) error {
	if c.Args().Len() == 0 {
		return nil
	}
	hint := ""
	if c.Command.Name == "explain" {
		hint = fmt.Sprintf("; to explain a profile, use --profile %s", c.Args().First())
	}
	return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("%s takes no arguments (got %q)%s; see `grok-sandbox %s --help`",
		c.Command.Name, c.Args().First(), hint, c.Command.Name)}
}

// profileTakenForCommand refuses explain's command when it is a built-in
// profile's name and no program of that name is on PATH: `explain strict`
// is not silently `explain` of the default profile. Otherwise explain
// takes the command as print does, to show what the agent table adds.
func profileTakenForCommand(c *cli.Context) error {
	first := c.Args().First()
	if first == "" || !config.IsBuiltin(first) {
		return nil
	}
	if _, err := exec.LookPath(first); err == nil {
		return nil
	}
	return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("%s: %q is a profile, not a command; did you mean --profile %s? (explain takes an optional command after --, whose agent it shows)",
		c.Command.Name, first, first)}
}

// version is the module version and VCS revision the binary was built
// from, as the Go toolchain recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return v + ", revision unknown (built without VCS information)"
	case modified && !strings.HasSuffix(v, "+dirty"):
		return v + ", revision " + rev + " with uncommitted changes"
	}
	return v + ", revision " + rev
}

// invocation collects what every command needs from the flags and the
// environment. The profile comes from --profile/--sandbox, else GROK_SANDBOX.
func invocation(c *cli.Context, target string) launcher.Invocation {
	req := resolve.Request{
		Workspace:      c.String("workspace"),
		Target:         target,
		IsolateNetwork: c.Bool("isolate-network"),
		Environ:        os.Environ(),
		Agent:          c.String("agent"),
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
