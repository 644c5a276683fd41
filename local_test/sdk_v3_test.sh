#!/usr/bin/env bash
# The SageMaker Python SDK v3 (3.27) against the image: tests/local_mode_v3 (Endpoint.invoke
# with v3's serializers, LocalSession's model / endpoint config / endpoint, ModelTrainer's
# local training then deploying its artifact, ModelBuilder's LOCAL_CONTAINER deploy), run with
# the pytest of .venv-sdk3, a side environment (v3 cannot share .venv with v2). Installs it
# first when it is missing or incomplete, under a lock, so the install ./run-tests starts in
# the background is waited for, not repeated.
#
#   local_test/sdk_v3_test.sh IMAGE
#
# Prints summary lines "LABEL<TAB>TEXT" on stdout (local_test/container_test.sh records them;
# a TEXT starting with FAILED is a failure), everything else on stderr; exits 1 on failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/.." && pwd)"
image="${1:?usage: local_test/sdk_v3_test.sh IMAGE}"
venv="$repo_root/.venv-sdk3"
# What .venv-sdk3 holds: the SDK, pytest, and XGBoost for the in-process references.
packages=("sagemaker==3.27.0" "xgboost-cpu==3.2.0" "pytest")
lock="${TMPDIR:-/tmp}/smserve-venv-sdk3-$(printf '%s' "$repo_root" | cksum | cut -d' ' -f1).lock"

log() { printf 'sdk_v3_test: %s\n' "$*" >&2; }

install_env() {
  (
    flock 9
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${packages[@]}"
  ) 9>"$lock"
}

if [ "${1:-}" = "--install" ]; then install_env; exit; fi

start="$(date +%s)"
if ! install_env >&2; then
  printf 'sdk v3\tFAILED: installing %s into .venv-sdk3 failed\n' "${packages[*]}"
  exit 1
fi
report="$(mktemp "${TMPDIR:-/tmp}/smserve-sdk-v3.XXXXXX.xml")"
timings="$(mktemp "${TMPDIR:-/tmp}/smserve-sdk-v3-timings.XXXXXX")"
trap 'rm -f "$report" "$timings"' EXIT
status=0
log "pytest tests/local_mode_v3 against $image (.venv-sdk3)"
(cd "$repo_root" && SMSERVE_LOCAL_MODE_IMAGE="$image" SMSERVE_V3_TIMINGS="$timings" \
  PYTHONPATH="$repo_root/src" "$venv/bin/pytest" -q -p no:cacheprovider \
  -W ignore::DeprecationWarning --junitxml="$report" tests/local_mode_v3) >&2 || status=$?
took=$(($(date +%s) - start))
python3 - "$report" "$timings" "$status" "$took" <<'PY'
import sys
import xml.etree.ElementTree as ET

report, timings, status, took = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
counts = {"passed": 0, "failed": 0, "skipped": 0}
try:
    cases = list(ET.parse(report).iter("testcase"))
except (ET.ParseError, OSError):
    cases = []
for case in cases:
    if case.find("skipped") is not None:
        counts["skipped"] += 1
    elif case.find("failure") is not None or case.find("error") is not None:
        counts["failed"] += 1
    else:
        counts["passed"] += 1
text = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests ran"
verdict = "FAILED: " if status else ""
print(f"sdk v3\t{verdict}{text} in {took} s (pytest exit {status})")
lines = open(timings).read().split("\n") if timings else []
found = [line for line in lines if line.strip()]
if found:
    print("v3 ModelBuilder\tdeploy() to first answer: " + "; ".join(found))
else:
    print("v3 ModelBuilder\tnot timed (its test did not reach a first answer)")
PY
[ "$status" -eq 0 ]
