# Sourced by setup.sh and quickstart.sh: say what is happening, and keep saying it while a long step runs.
# PROGRESS_NAME names the script in every line ("flowgate setup", "quickstart").

say() { echo "${PROGRESS_NAME:-flowgate}: $*" >&2; }

# long_step LOG DESCRIPTION COMMAND...: runs COMMAND with its output in LOG, printing how long it has
# been running every 15 s (pip and node-gyp are otherwise silent for minutes); on failure, LOG's tail.
long_step() {
  local log="$1" what="$2"
  shift 2
  say "$what (output in $log)"
  local started=$SECONDS
  "$@" >"$log" 2>&1 &
  local pid=$!
  local next=$((SECONDS + 15))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      say "  … still ${what,} ($((SECONDS - started)) s)"
      next=$((SECONDS + 15))
    fi
  done
  if ! wait "$pid"; then
    say "failed after $((SECONDS - started)) s: $what; the end of $log:"
    tail -n 30 "$log" >&2
    return 1
  fi
  say "  done in $((SECONDS - started)) s"
}
