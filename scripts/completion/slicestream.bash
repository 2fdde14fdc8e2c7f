# bash completion for slicestream-server, slicestream-detector and slicestream-ctl.
#
# The candidates come from the programs' own --help (CLI11's "Subcommands:" section, and the flags
# of every other section: "Options:", "Endpoints:", ...) as one completes, so they never drift
# from the flags. Installed by `cmake --install` as share/bash-completion/completions/<program>;
# or source this file.

# The subcommands, then the options, that `$@ --help` lists.
_slicestream_help_words() {
  "$@" --help 2>/dev/null | awk '
    /^[A-Za-z]+:$/ { section = $0; next }
    section == "Subcommands:" && /^  [a-z]/ { print $1 }
    section != "Subcommands:" && /^  -/ {
      n = split($1, names, ",")
      for (i = 1; i <= n; i++) {
        sub(/[ :].*/, "", names[i])
        if (names[i] ~ /^-/) print names[i]
      }
    }'
}

_slicestream() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local -a command=("${COMP_WORDS[0]}")
  local word i
  # The subcommand chain so far: words that the command at that point lists as subcommands.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    [[ $word == -* ]] && continue
    if _slicestream_help_words "${command[@]}" | grep -qxF -- "$word"; then
      command+=("$word")
    fi
  done
  local words
  words=$(_slicestream_help_words "${command[@]}")
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(grep -- '^-' <<<"$words")" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$(grep -v -- '^-' <<<"$words")" -- "$cur")
    # Files for positional arguments and option values (scan files, --config, --out ...).
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
  fi
}

complete -o filenames -F _slicestream slicestream-server slicestream-detector slicestream-ctl
