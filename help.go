package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/help"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/verbs"
)

// helpText is the long help of grok-sandbox and of run: what a user needs
// at the terminal without the README.
const helpText = `Profiles: off (none), workspace, devbox, read-only, strict, and custom ones
(grok-sandbox profiles lists them; grok-sandbox explain --profile NAME says
what one allows).

The profile is the first of: --profile NAME (or --sandbox), $GROK_SANDBOX,
[sandbox] profile in GROK_HOME/config.toml, off.

Environment:
  GROK_SANDBOX   the profile when --profile is not given
  GROK_HOME      grok-sandbox's home (default ~/.grok)
  GROK_SANDBOX_BWRAP  the bwrap to use (default: /usr/bin, /usr/local/bin or /bin; never PATH)

Files:
  GROK_HOME/sandbox.toml          global profiles
  WORKSPACE/.grok/sandbox.toml    project profiles (can only add names; read only
                                  once you trust it: grok-sandbox trust)
  /etc/grok-sandbox/requirements.toml  the administrator's requirements
  GROK_HOME/config.toml           [sandbox] profile, [shell_environment_policy]
  GROK_HOME/sandbox-events.jsonl  the event log

Exit status: the command's own; 125 grok-sandbox refused or failed before
the command started; 126 the command cannot be executed; 127 not found.

Examples:
  grok-sandbox run --profile strict -- grok
  alias grok='grok-sandbox run --profile workspace -- grok'

The reference: grok-sandbox help TOPIC (grok-sandbox help lists the topics).`

// appHelpTemplate is urfave/cli's help of the app with the help topics
// after it, one line each.
func appHelpTemplate() string {
	var b strings.Builder
	b.WriteString(cli.AppHelpTemplate)
	b.WriteString("\nHELP TOPICS (grok-sandbox help TOPIC):\n")
	width := 0
	for _, t := range help.Topics() {
		width = max(width, len(t.Name))
	}
	for _, t := range help.Topics() {
		fmt.Fprintf(&b, "   %-*s  %s\n", width, t.Name, t.Summary)
	}
	return b.String()
}

// helpCommand is `grok-sandbox help [TOPIC|COMMAND]`. It is a command of
// its own, so urfave/cli adds no help command (nor, for the app, the --help
// flag: newApp adds that itself). Every other command hides the library's
// help subcommand, so that `run -- help` runs the program named help.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "the reference: grok-sandbox help TOPIC prints one; help alone lists them",
		ArgsUsage: "[TOPIC|COMMAND]",
		Description: "With no argument, what grok-sandbox --help shows. With a topic, the topic: through\n" +
			"$PAGER (less when unset; PAGER=cat for none) when standard output is a terminal.\n" +
			"With a command, what grok-sandbox COMMAND --help shows.",
		Action: showHelp,
	}
}

func showHelp(c *cli.Context) error {
	switch c.NArg() {
	case 0:
		return cli.ShowAppHelp(c)
	case 1:
	default:
		return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("help takes one topic, not %d words; grok-sandbox help lists the topics", c.NArg())}
	}
	name := c.Args().First()
	if text, ok := help.Text(name); ok {
		return verbs.Help(c.App.Writer, text)
	}
	if cmd := c.App.Command(name); cmd != nil {
		return cli.ShowCommandHelp(c, cmd.Name)
	}
	return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("help: no topic or command %q; the topics: %s", printable.String(name), strings.Join(strings.Fields(help.Names()), ", "))}
}

// completion prints a completion script for the shell named by the one
// argument. The scripts are static: grok-sandbox never reads its own
// completion flag from a command line, so a wrapped command's arguments can
// never be taken for it.
func completion(c *cli.Context) error {
	if c.NArg() == 0 {
		return &launcher.ExitError{Code: launcher.ExitRefused, Err: errors.New("completion: name one shell: bash, zsh or fish (e.g. grok-sandbox completion bash > /etc/bash_completion.d/grok-sandbox)")}
	}
	if c.NArg() > 1 {
		return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("completion takes one shell, not %d words: grok-sandbox completion %s", c.NArg(), printable.String(c.Args().First()))}
	}
	script, ok := completionScripts[c.Args().First()]
	script = strings.ReplaceAll(script, "@TOPICS@", help.Names())
	if !ok {
		return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("completion: unknown shell %q: use bash, zsh or fish", printable.String(c.Args().First()))}
	}
	_, err := fmt.Fprint(c.App.Writer, script)
	return err
}

// completionScripts are the scripts by shell; @TOPICS@ stands for the help
// topics' names, offered after help.
var completionScripts = map[string]string{
	"bash": `# grok-sandbox completion for bash: source it, or put it in
# /etc/bash_completion.d/ (or ~/.local/share/bash-completion/completions/).
_grok_sandbox() {
  local cur prev verbs i
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  verbs="run print explain agents profiles doctor status log check trust completion man help"
  # After "--" (or the command) the words are the wrapped command's.
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ ${COMP_WORDS[i]} == -- ]] && { COMPREPLY=($(compgen -c -- "$cur")); return; }
  done
  case $prev in
    --profile|--sandbox)
      COMPREPLY=($(compgen -W "$(grok-sandbox profiles 2>/dev/null | awk '{print $1}')" -- "$cur")); return ;;
    --workspace) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --target) COMPREPLY=($(compgen -W "linux darwin" -- "$cur")); return ;;
    --agent) COMPREPLY=($(compgen -W "$(grok-sandbox agents --json 2>/dev/null | sed -n 's/^ *"name": "\(.*\)",$/\1/p') none" -- "$cur")); return ;;
    completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
  esac
  if ((COMP_CWORD == 2)) && [[ ${COMP_WORDS[1]} == help ]]; then
    COMPREPLY=($(compgen -W "@TOPICS@" -- "$cur"))
    return
  fi
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "$verbs --help --version" -- "$cur"))
  else
    local flags
    # Each verb's own flags, never one it rejects.
    case ${COMP_WORDS[1]} in
      run) flags="--profile --sandbox --workspace --isolate-network --agent --verbose --help --" ;;
      print) flags="--profile --sandbox --workspace --target --json --isolate-network --agent --help --" ;;
      explain) flags="--profile --sandbox --workspace --target --json --isolate-network --agent --help --" ;;
      agents|status) flags="--json --help" ;;
      profiles) flags="--workspace --help" ;;
      doctor|check) flags="--workspace --help" ;;
      log) flags="-n --all --violations --profile --command --since --json --follow --summary --suggest --help" ;;
      trust) flags="--revoke --list --help"; [[ $cur != -* ]] && { COMPREPLY=($(compgen -d -- "$cur")); return; } ;;
      *) flags="--help" ;;
    esac
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  fi
}
complete -F _grok_sandbox grok-sandbox
`,
	"zsh": `#compdef grok-sandbox
# grok-sandbox completion for zsh: put it in a directory of $fpath as
# _grok-sandbox.
_grok-sandbox() {
  local -a verbs
  verbs=(run print explain agents profiles doctor status log check trust completion man help)
  if (( CURRENT == 2 )); then
    _describe 'command' verbs
    return
  fi
  if (( ${words[(I)--]} )); then
    _normal
    return
  fi
  local -a profile workspace isolate agent target json
  profile=('(--profile --sandbox)'{--profile,--sandbox}'[the sandbox profile]:profile:(${(f)"$(grok-sandbox profiles 2>/dev/null | cut -d" " -f1)"})')
  workspace=('--workspace[the workspace directory]:directory:_files -/')
  isolate=('--isolate-network[no network for the wrapped command either]')
  agent=('--agent[the agent CLI the command is]:agent:(claude codex gemini grok opencode none)')
  target=('--target[the platform to render for]:target:(linux darwin)')
  json=('--json[one JSON document]')
  # Each verb's own flags, never one it rejects.
  case $words[2] in
    run) _arguments $profile $workspace $isolate $agent '(-v --verbose)'{-v,--verbose}'[say which profile and backend are used]' '*::command:_normal' ;;
    print|explain) _arguments $profile $workspace $isolate $agent $target $json '*::command:_normal' ;;
    agents|status) _arguments $json ;;
    profiles|doctor|check) _arguments $workspace ;;
    log) _arguments '-n[the last N events]:N:' '--all[every event]' '--violations[violations only]' '--profile[events of a profile]:profile:' '--command[events of a program]:program:' '--since[events since]:when:' $json '--follow[keep printing new events]' '--summary[counts]' '--suggest[allow_hosts entries]' ;;
    trust) _arguments '--revoke[no longer trust the project file]' '--list[list the trusted project files]' '1:directory:_files -/' ;;
    completion) _arguments '1:shell:(bash zsh fish)' ;;
    help) _arguments '1:topic:(@TOPICS@)' ;;
  esac
}
_grok-sandbox "$@"
`,
	"fish": `# grok-sandbox completion for fish: put it in
# ~/.config/fish/completions/grok-sandbox.fish.
set -l verbs run print explain agents profiles doctor status log check trust completion man help
complete -c grok-sandbox -f -n "not __fish_seen_subcommand_from $verbs" -a "$verbs"
# Each verb's own flags, never one it rejects.
complete -c grok-sandbox -n "__fish_seen_subcommand_from run print explain; and not __fish_seen_argument -l --" -l profile -l sandbox -x -a "(grok-sandbox profiles 2>/dev/null | string split -f1 ' ')" -d "the sandbox profile"
complete -c grok-sandbox -n "__fish_seen_subcommand_from run print explain profiles doctor check; and not __fish_seen_argument -l --" -l workspace -x -a "(__fish_complete_directories)" -d "the workspace directory"
complete -c grok-sandbox -n "__fish_seen_subcommand_from run print explain; and not __fish_seen_argument -l --" -l isolate-network -d "no network for the wrapped command either"
complete -c grok-sandbox -n "__fish_seen_subcommand_from run print explain; and not __fish_seen_argument -l --" -l agent -x -a "claude codex gemini grok opencode none" -d "the agent CLI the command is"
complete -c grok-sandbox -n "__fish_seen_subcommand_from print explain; and not __fish_seen_argument -l --" -l target -x -a "linux darwin" -d "the platform to render for"
complete -c grok-sandbox -n "__fish_seen_subcommand_from print explain agents status log; and not __fish_seen_argument -l --" -l json -d "one JSON document"
complete -c grok-sandbox -n "__fish_seen_subcommand_from run; and not __fish_seen_argument -l --" -s v -l verbose -d "say which profile and backend are used"
complete -c grok-sandbox -n "__fish_seen_subcommand_from log" -l all -l violations -l follow -l summary -l suggest -d "see grok-sandbox log --help"
complete -c grok-sandbox -n "__fish_seen_subcommand_from trust" -l revoke -l list -a "(__fish_complete_directories)" -d "see grok-sandbox trust --help"
complete -c grok-sandbox -n "__fish_seen_subcommand_from completion" -x -a "bash zsh fish"
complete -c grok-sandbox -n "__fish_seen_subcommand_from help" -x -a "@TOPICS@" -d "help topic"
`,
}
