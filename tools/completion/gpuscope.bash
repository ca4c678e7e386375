# bash completion for gpuscope, read from the binary's own --help so that it never drifts from the
# flags: subcommands (the "Subcommands:" list only), each subcommand's options (the option lines of
# its --help, never words of the descriptions or examples), the values of enumerated options
# (`--color TEXT:{auto,always,never}`), model and GPU names for plan's --model and --gpu
# (--list-models, --list-gpus; --model also completes files), then file names.
# Installed as share/bash-completion/completions/gpuscope; or: source tools/completion/gpuscope.bash

# The subcommands: first words of the "Subcommands:" section of `gpuscope --help`, up to its end.
_gpuscope_subcommands() {
  "$1" --help 2>/dev/null | awk '/^Subcommands:/ { f = 1; next } f && /^$/ { exit } f && /^  [a-z]/ { print $1 }'
}

# A subcommand's options: the option lines of its --help ("  -j,--threads INT  ...", "  --json").
_gpuscope_options() {
  "$1" "$2" --help 2>/dev/null | sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z0-9][a-z0-9-]*\).*/\2/p' | sort -u
}

_gpuscope() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev="" prog=${COMP_WORDS[0]} sub="" i
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) sub=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $sub ]]; then
    COMPREPLY=($(compgen -W "$(_gpuscope_subcommands "$prog") --help --version" -- "$cur"))
    return
  fi
  if [[ $prev == --* ]]; then
    case $sub:$prev in
      plan:--model)
        COMPREPLY=($(compgen -W "$("$prog" plan --list-models 2>/dev/null | awk '{ print $1 }')" -- "$cur")
                   $(compgen -f -- "$cur"))
        return ;;
      plan:--gpu)
        COMPREPLY=($(compgen -W "$("$prog" plan --list-gpus 2>/dev/null | awk '{ print $1 }')" -- "$cur"))
        return ;;
    esac
    # An enumerated option: its values from the help line ("--color TEXT:{auto,always,never}").
    local values
    values=$("$prog" "$sub" --help 2>/dev/null |
      sed -n "s/^  \(-[a-zA-Z],\)\{0,1\}$prev [A-Z]*:{\([^}]*\)}.*/\2/p" | tr ',' ' ')
    if [[ -n $values ]]; then
      COMPREPLY=($(compgen -W "$values" -- "$cur"))
      return
    fi
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_gpuscope_options "$prog" "$sub")" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -o bashdefault -F _gpuscope gpuscope
