#!/usr/bin/env bash
# Runs a command on a busy machine, to reproduce what a loaded CI runner or a shared box does
# to timing: two CPU-bound processes (busy shell loops) run beside it for its whole run and are
# stopped by PID when it ends, however it ends. The exit status is the command's.
#
#   local_test/under_load.sh ./run-tests
#   local_test/under_load.sh .venv/bin/pytest -q -p no:cacheprovider tests/scoring
#
# SMSERVE_LOAD_PROCESSES sets how many busy processes (default 2, one per core of a 2-core box).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: local_test/under_load.sh COMMAND [ARG...]" >&2
  exit 2
fi

busy=()
stop_busy() {
  if [ "${#busy[@]}" -gt 0 ]; then
    kill "${busy[@]}" 2>/dev/null || true
    wait "${busy[@]}" 2>/dev/null || true
  fi
}
trap stop_busy EXIT

for _ in $(seq "${SMSERVE_LOAD_PROCESSES:-2}"); do
  (while :; do :; done) &
  busy+=("$!")
done
echo "under_load: busy processes ${busy[*]} beside: $*" >&2
"$@"
