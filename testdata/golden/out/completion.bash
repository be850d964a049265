# grok-sandbox completion for bash: source it, or put it in
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
    COMPREPLY=($(compgen -W "commands profiles config managed environment deny network agents recipes integrity violations json hardening limits backends macos performance troubleshooting" -- "$cur"))
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
