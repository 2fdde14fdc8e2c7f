# Sourced by the smoke tests (after they set `work` and `server_pid`): on exit a server still
# running is killed, a failure prints the end of $work/server.log, and $work goes; fail MESSAGE.

cleanup() {
  local status=$?
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  if [[ $status -ne 0 && -f $work/server.log ]]; then
    echo "---- server log (last 40 lines)"
    tail -40 "$work/server.log"
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
