# bash completion for gpuscope: subcommands, then each subcommand's options, read from the
# binary's own --help (so it never drifts from the flags), then file names.
# Installed as share/bash-completion/completions/gpuscope; or: source tools/completion/gpuscope.bash
_gpuscope() {
  local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} sub="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) sub=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $sub ]]; then
    local subs
    subs=$("$prog" --help 2>/dev/null | awk '/^Subcommands:/ { f = 1; next } f && /^  [a-z]/ { print $1 }')
    COMPREPLY=($(compgen -W "$subs --help --version" -- "$cur"))
    return
  fi
  if [[ $cur == -* ]]; then
    local opts
    opts=$("$prog" "$sub" --help 2>/dev/null | grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u)
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -o bashdefault -F _gpuscope gpuscope
