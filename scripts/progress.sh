# Sourced by setup.sh and quickstart.sh: say what is happening, and keep saying it while a long step runs.
# PROGRESS_NAME names the script in every line ("flowgate setup", "quickstart").

say() { echo "${PROGRESS_NAME:-flowgate}: $*" >&2; }

# long_step LOG DESCRIPTION COMMAND...: runs COMMAND with its output in LOG and says how long it has
# been running (pip and node-gyp are otherwise silent for minutes); on failure, LOG's tail.
# DESCRIPTION is said once in full; while waiting only its title (the text before " (") and the
# seconds are shown: on a terminal one line rewritten in place, elsewhere (CI logs) a line every
# PROGRESS_EVERY seconds (15).
long_step() {
  local log="$1" what="$2"
  shift 2
  local title="${what%% (*}"
  say "$what (output in $log)"
  local started=$SECONDS every="${PROGRESS_EVERY:-15}" live=0
  [ -t 2 ] && live=1 && every=1
  "$@" >"$log" 2>&1 &
  local pid=$!
  local next=$((SECONDS + every))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      if [ "$live" = 1 ]; then
        printf '\r\033[K%s:   … %s: %d s' "${PROGRESS_NAME:-flowgate}" "$title" "$((SECONDS - started))" >&2
      else
        say "  … $title: $((SECONDS - started)) s"
      fi
      next=$((SECONDS + every))
    fi
  done
  [ "$live" = 1 ] && printf '\r\033[K' >&2
  if ! wait "$pid"; then
    say "failed after $((SECONDS - started)) s: $title; the end of $log:"
    tail -n 30 "$log" >&2
    return 1
  fi
  say "  done in $((SECONDS - started)) s"
}
