#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the three programs run from there, each has a man
# page generated from its --help (with its current flags), and the bash completion completes
# subcommands and flags from the installed programs.
#   install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d /tmp/slicestream-install-test.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 || { cat "$prefix.log"; fail "cmake --install failed"; }
rm -f "$prefix.log"
for program in slicestream-server slicestream-detector slicestream-ctl; do
  [[ -x $prefix/bin/$program ]] || fail "bin/$program missing"
  "$prefix/bin/$program" --version | grep -qE "^$program [0-9]+\.[0-9]+" || fail "$program --version"
  page=$prefix/share/man/man1/$program.1
  [[ -s $page ]] || fail "man page $program.1 missing"
  grep -q '^\.TH' "$page" || fail "$program.1 is not a man page"
  [[ -s $prefix/share/bash-completion/completions/$program ]] || fail "completion for $program"
done
# The pages carry the programs' flags (help2man escapes '-' as '\-').
grep -q 'reset\\-slices' "$prefix/share/man/man1/slicestream-ctl.1" || fail "ctl page lacks reset-slices"
grep -q '\\-\\-listen' "$prefix/share/man/man1/slicestream-server.1" || fail "server page lacks --listen"

PATH=$prefix/bin:$PATH
# shellcheck source=/dev/null
source "$prefix/share/bash-completion/completions/slicestream-ctl"
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _slicestream
  echo "${COMPREPLY[*]}"
}
[[ " $(complete_words slicestream-ctl res) " == *" reset-slices "* ]] || fail "ctl subcommands: $(complete_words slicestream-ctl res)"
[[ $(complete_words slicestream-ctl set-slice --bo) == "--box" ]] || fail "set-slice flags: $(complete_words slicestream-ctl set-slice --bo)"
replay_words=" $(complete_words slicestream-detector replay "") "
[[ $replay_words == *" hdf5 "* && $replay_words == *" tiff "* ]] || fail "detector replay subcommands: $replay_words"
[[ " $(complete_words slicestream-server --lis) " == *" --listen "* ]] || fail "server flags"
echo "install test passed"
