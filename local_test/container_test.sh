#!/usr/bin/env bash
# End-to-end test of the image, the way SageMaker uses it:
#   1. docker build (tag smserve:test; reports the image size), image metadata checks
#   2. `docker run IMAGE train` for XGBoost and k-means on local_test/test_dir's data, plus one
#      training run that must fail and write /opt/ml/output/failure
#   3. `docker run -d -p PORT:8080 IMAGE serve` with each model mounted at /opt/ml/model (read
#      only), time from `docker run` to the first 200 on /ping, then check_endpoint.py (every
#      payload format x every Accept type, /execution-parameters, client errors)
#   4. `docker stop -t 30` (SIGTERM, SIGKILL 30 s later, as SageMaker does): the server must exit
#      0 well before the SIGKILL
#   5. SAGEMAKER_BIND_TO_PORT (the accept-bind-to-port label's promise)
#   5b. a model.tar.gz alone on a read-only /opt/ml/model (unpacked to a temporary directory)
#   5c. the container's own limits: `--cpus 1 --memory 1g` (serverless-like: one worker, a
#      multi-model load past the memory budget answers 507, no OOM kill) and `--cpus 3` (a quota
#      above the machine's CPUs sizes to the machine)
#   6. the SageMaker Python SDK's local mode (tests/local_mode): Model.deploy, and the whole
#      Estimator workflow (fit, deploy, predict, Batch Transform) through Docker Compose,
#      compared with in-process predictions
#   7. the KServe manifest's predictor as a Deployment under `podman kube play`
#      (tests/local_mode/test_kserve_pod.py)
#
#   local_test/container_test.sh
#
# Environment: SMSERVE_TEST_IMAGE (default smserve:test), SMSERVE_SKIP_BUILD=1 (test an image
# already built), DOCKER_BUILD_ARGS (extra `docker build` words), SMSERVE_SKIP_LOCAL_MODE=1
# (leave out step 6), SMSERVE_SKIP_KSERVE=1 (leave out step 7).
# Uses the Docker engine when `docker info` works; otherwise sets one up with
# local_test/container_engine.sh (podman serving the Docker API, a local python:3.11-slim;
# -p publishing works through it unchanged). Containers it started are removed on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/.." && pwd)"
image="${SMSERVE_TEST_IMAGE:-smserve:test}"
name_prefix="smserve-test-$$"
ping_timeout_s=90
python="$(command -v python3 || command -v python)"

log() { printf 'container_test: %s\n' "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

summary=()
step_times=()
failures=0
record() { summary+=("$(printf '%-22s %s' "$1" "$2")"); }
# timed LABEL COMMAND...: runs the step and keeps its wall time for the summary.
timed() {
  local label="$1" start status=0
  shift
  start="$(now)"
  "$@" || status=$?
  step_times+=("$label $(elapsed "$start" "$(now)") s")
  return "$status"
}
fail() { failures=$((failures + 1)); log "FAIL: $*"; }

workdir="$(mktemp -d "${TMPDIR:-/tmp}/smserve-container-test.XXXXXX")"
containers=()
cleanup() {
  local c
  for c in "${containers[@]+"${containers[@]}"}"; do
    docker rm -f "$c" >/dev/null 2>&1 || true
  done
  rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- engine -------------------------------------------------------------------------------------

ensure_engine() {
  command -v docker >/dev/null || die "no docker CLI on PATH"
  if docker info >/dev/null 2>&1; then
    # podman's Docker API has no BuildKit: the CLI must use the classic builder there.
    if [[ "${DOCKER_HOST:-}" == *podman* ]]; then export DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}"; fi
    log "using the container engine at ${DOCKER_HOST:-the default socket}"
    return
  fi
  local script="$here/container_engine.sh" export_line
  log "no engine answers; setting one up with $script (a few minutes the first time)"
  export_line="$(bash "$script" | grep -E '^export DOCKER_HOST=' | tail -n 1)" \
    || die "$script failed"
  [ -n "$export_line" ] || die "$script printed no export line"
  eval "$export_line"
  docker info >/dev/null 2>&1 || die "the engine set up by $script does not answer"
  log "engine ready: $export_line"
}

# --- helpers ------------------------------------------------------------------------------------

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_ping PORT CONTAINER: polls until 200; prints nothing, returns 1 on timeout/exit.
wait_for_ping() {
  local port="$1" container="$2" deadline code
  deadline=$(($(date +%s) + ping_timeout_s))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/ping" || true)"
    [ "$code" = "200" ] && return 0
    if [ "$(docker inspect -f '{{.State.Running}}' "$container" 2>/dev/null)" != "true" ]; then
      log "container $container exited before answering /ping"
      return 1
    fi
    sleep 0.05
  done
  log "no 200 on /ping within ${ping_timeout_s} s"
  return 1
}

show_logs() {
  log "last lines of docker logs $1:"
  docker logs --tail 40 "$1" 2>&1 | sed 's/^/    /' >&2 || true
}

# stop_gracefully CONTAINER LABEL: docker stop -t 30 (SIGTERM), expects exit 0 within 30 s.
stop_gracefully() {
  local container="$1" label="$2" start end took code
  start="$(now)"
  docker stop -t 30 "$container" >/dev/null
  end="$(now)"
  took="$(elapsed "$start" "$end")"
  code="$(docker inspect -f '{{.State.ExitCode}}' "$container")"
  if [ "$code" = "0" ] && awk -v t="$took" 'BEGIN { exit !(t < 30) }'; then
    record "$label SIGTERM" "exit 0 after ${took} s (docker stop -t 30)"
  else
    show_logs "$container"
    fail "$label: docker stop -t 30 took ${took} s, exit code $code (expected 0 within 30 s)"
    record "$label SIGTERM" "FAILED: exit $code after ${took} s"
  fi
}

# --- 1. build -----------------------------------------------------------------------------------

build_image() {
  if [ "${SMSERVE_SKIP_BUILD:-0}" = "1" ]; then
    docker image inspect "$image" >/dev/null 2>&1 || die "SMSERVE_SKIP_BUILD=1 but no image $image"
    log "SMSERVE_SKIP_BUILD=1: testing the existing $image"
    return
  fi
  log "docker build -t $image $repo_root"
  local start
  start="$(now)"
  # shellcheck disable=SC2086  # DOCKER_BUILD_ARGS is a list of words on purpose
  docker build ${DOCKER_BUILD_ARGS:-} -t "$image" "$repo_root" \
    || die "docker build failed"
  record "build" "$(elapsed "$start" "$(now)") s (layer cache as found)"
}

check_image() {
  local size mb base_size labels entrypoint cmd exposed env usage
  size="$(docker image inspect -f '{{.Size}}' "$image")"
  mb="$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1000000 }')"
  base_size="$(docker image inspect -f '{{.Size}}' python:3.11-slim 2>/dev/null || echo "")"
  if [ -n "$base_size" ]; then
    record "image size" "$mb MB ($size bytes): python:3.11-slim as found here $(awk -v s="$base_size" 'BEGIN { printf "%.1f", s / 1000000 }') MB + smserve layers $(awk -v s="$size" -v b="$base_size" 'BEGIN { printf "%.1f", (s - b) / 1000000 }') MB"
  else
    record "image size" "$mb MB ($size bytes)"
  fi

  labels="$(docker image inspect -f '{{json .Config.Labels}}' "$image")"
  for label in com.amazonaws.sagemaker.capabilities.accept-bind-to-port \
    com.amazonaws.sagemaker.capabilities.multi-models; do
    [[ "$labels" == *"\"$label\":\"true\""* ]] || fail "image label $label=true missing: $labels"
  done
  entrypoint="$(docker image inspect -f '{{json .Config.Entrypoint}}' "$image")"
  cmd="$(docker image inspect -f '{{json .Config.Cmd}}' "$image")"
  [ "$entrypoint" = '["smserve"]' ] || fail "ENTRYPOINT is $entrypoint, expected exec form [\"smserve\"]"
  exposed="$(docker image inspect -f '{{json .Config.ExposedPorts}}' "$image")"
  [[ "$exposed" == *'"8080/tcp"'* ]] || fail "port 8080 not exposed: $exposed"
  env="$(docker image inspect -f '{{json .Config.Env}}' "$image")"
  [[ "$env" == *'"SM_MODEL_DIR=/opt/ml/model"'* ]] || fail "SM_MODEL_DIR not set: $env"

  # Named and removed by hand: podman's Docker API reports exit 0 for any `docker run --rm`.
  # No command outside a training job's layout: the usage, and a failure (exit 2).
  containers+=("$name_prefix-usage")
  local status=0
  usage="$(docker run --name "$name_prefix-usage" "$image" 2>&1)" || status=$?
  if [ "$status" -eq 2 ] && [[ "$usage" == *serve* && "$usage" == *train* ]]; then
    record "docker run IMAGE" "prints usage, exit 2 (ENTRYPOINT $entrypoint CMD $cmd)"
  else
    fail "docker run $image (no command) should print usage naming serve and train, exit 2: exit $status: $usage"
  fi
}

# --- 2. training --------------------------------------------------------------------------------

train() {
  local algorithm="$1" dir="$workdir/$1" start
  mkdir -p "$dir"
  cp -R "$here/test_dir/input" "$dir/input"
  start="$(now)"
  if TEST_DIR="$dir" timeout 600 bash "$here/train_local.sh" "$image" "$algorithm"; then
    if [ -n "$(ls -A "$dir/model")" ] && [ ! -e "$dir/output/failure" ]; then
      record "$algorithm train" "ok in $(elapsed "$start" "$(now)") s: $(cd "$dir/model" && ls | tr '\n' ' ')"
      return 0
    fi
    fail "$algorithm training exited 0 but left no model (or wrote output/failure)"
  else
    fail "$algorithm training failed"
  fi
  record "$algorithm train" "FAILED"
  return 1
}

train_must_fail() {
  local dir="$workdir/bad" status=0
  mkdir -p "$dir"
  cp -R "$here/test_dir/input" "$dir/input"
  printf '{"algorithm": "xgboost", "num_round": "10", "no_such_hyperparameter": "1"}\n' \
    >"$dir/input/config/hyperparameters-bad.json"
  TEST_DIR="$dir" timeout 300 bash "$here/train_local.sh" "$image" bad >/dev/null 2>&1 || status=$?
  if [ "$status" -ne 0 ] && [ -s "$dir/output/failure" ]; then
    record "failing train" "exit $status, output/failure: $(head -c 100 "$dir/output/failure" | tr '\n' ' ')"
  else
    fail "training with an unknown hyperparameter: exit $status, output/failure $(ls "$dir/output" 2>&1)"
    record "failing train" "FAILED: exit $status"
  fi
}

# --- 3./4. serving ------------------------------------------------------------------------------

serve_and_check() {
  local algorithm="$1" port container start took
  port="$(free_port)"
  container="$name_prefix-$algorithm"
  containers+=("$container")
  log "docker run -d -p 127.0.0.1:$port:8080 $image serve  ($algorithm model)"
  start="$(now)"
  docker run -d --name "$container" -p "127.0.0.1:$port:8080" \
    -v "$workdir/$algorithm/model:/opt/ml/model:ro" "$image" serve >/dev/null
  if ! wait_for_ping "$port" "$container"; then
    show_logs "$container"
    fail "$algorithm: the server never answered /ping with 200"
    record "$algorithm serve" "FAILED: no 200 on /ping"
    return
  fi
  took="$(elapsed "$start" "$(now)")"
  record "$algorithm ping" "first 200 on /ping ${took} s after docker run"

  local checks status=0
  checks="$("$python" "$here/check_endpoint.py" --url "http://127.0.0.1:$port" \
    --algorithm "$algorithm" --payloads "$here/payloads" 2>&1)" || status=$?
  printf '%s\n' "$checks" >&2
  if [ "$status" -ne 0 ]; then
    show_logs "$container"
    fail "$algorithm: endpoint checks failed"
  fi
  record "$algorithm endpoint" "$(printf '%s\n' "$checks" | tail -n 1 | sed 's/^check_endpoint: [a-z]*: //')"
  stop_gracefully "$container" "$algorithm"
}

# --- 5. SAGEMAKER_BIND_TO_PORT ------------------------------------------------------------------

bind_to_port() {
  local port container="$name_prefix-bind"
  port="$(free_port)"
  containers+=("$container")
  docker run -d --name "$container" -p "127.0.0.1:$port:9090" -e SAGEMAKER_BIND_TO_PORT=9090 \
    -v "$workdir/kmeans/model:/opt/ml/model:ro" "$image" serve >/dev/null
  if wait_for_ping "$port" "$container"; then
    record "bind-to-port" "SAGEMAKER_BIND_TO_PORT=9090: /ping 200 on 9090"
  else
    show_logs "$container"
    fail "SAGEMAKER_BIND_TO_PORT=9090: no 200 on /ping at port 9090"
    record "bind-to-port" "FAILED"
  fi
  docker rm -f "$container" >/dev/null 2>&1 || true
}

# --- 5b. a model.tar.gz on a read-only /opt/ml/model ----------------------------------------------

# As SageMaker mounts it: the archive alone, read only; the server unpacks it to a temp dir.
archive_read_only() {
  local port container="$name_prefix-archive" folder="$workdir/archive"
  mkdir -p "$folder"
  tar czf "$folder/model.tar.gz" -C "$workdir/xgboost/model" .
  port="$(free_port)"
  containers+=("$container")
  docker run -d --name "$container" -p "127.0.0.1:$port:8080" \
    -v "$folder:/opt/ml/model:ro" "$image" serve >/dev/null
  if wait_for_ping "$port" "$container" \
    && curl -fs --max-time 10 -H 'Content-Type: text/csv' --data-binary @"$here/payloads/dense.csv" \
      "http://127.0.0.1:$port/invocations" >/dev/null; then
    record "read-only archive" "model.tar.gz on a read-only /opt/ml/model: /ping 200, predictions"
  else
    show_logs "$container"
    fail "a model.tar.gz on a read-only /opt/ml/model was not served"
    record "read-only archive" "FAILED"
  fi
  docker rm -f "$container" >/dev/null 2>&1 || true
}

# --- 5c. the container's own limits: serverless-like and a quota above the machine ------------

# sizing_line CONTAINER: the server's log line saying what it sized itself from.
sizing_line() { docker logs "$1" 2>&1 | grep -m 1 'sizing from' | sed 's/.*sizing from //'; }

# post_model PORT NAME: POST /models for /opt/ml/models/NAME; prints the status code.
post_model() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
    --data "{\"model_name\": \"$2\", \"url\": \"/opt/ml/models/$2\"}" "http://127.0.0.1:$1/models"
}

# A multi-model container under `--cpus 1 --memory 1g` (a serverless endpoint's smallest size):
# one worker, a small model loads and answers, a model whose files alone are twice the default
# budget is refused with 507 instead of being loaded into an OOM kill, and the server still
# answers afterwards with the kernel's OOM killer never having acted (docker inspect).
limits_serverless() {
  local port container="$name_prefix-limits" models="$workdir/limits-models" line code rows state
  mkdir -p "$models/small" "$models/big"
  cp "$workdir/xgboost/model/"* "$models/small/"
  # A real k-means model of 256 MiB (1,024 centroids of 65,536 features), written by the image.
  containers+=("$container-write")
  docker run --name "$container-write" --entrypoint python -v "$models/big:/out" "$image" -c \
    'import numpy as np, pathlib; from smserve.algorithms.ndarray import write_ndarray_file as w; w(pathlib.Path("/out/model_algo-1"), np.zeros((1024, 65536), np.float32))' \
    || die "could not write the big k-means model"
  docker rm -f "$container-write" >/dev/null
  port="$(free_port)"
  containers+=("$container")
  docker run -d --name "$container" --cpus 1 --memory 1g -p "127.0.0.1:$port:8080" \
    -e SAGEMAKER_MULTI_MODEL=true -v "$models:/opt/ml/models:ro" "$image" serve >/dev/null
  if ! wait_for_ping "$port" "$container"; then
    show_logs "$container"
    fail "--cpus 1 --memory 1g: no 200 on /ping"
    record "1 CPU, 1 GiB" "FAILED: no 200 on /ping"
    return
  fi
  line="$(sizing_line "$container")"
  [[ "$line" == "1 CPUs (cgroup "*"1024 MiB of memory (cgroup "*": 1 workers x "* ]] \
    || fail "--cpus 1 --memory 1g: sized as: $line"
  code="$(post_model "$port" small)"
  rows="$(curl -fs --max-time 10 -H 'Content-Type: text/csv' -H 'Accept: text/csv' \
    --data-binary @"$here/payloads/dense.csv" "http://127.0.0.1:$port/models/small/invoke" | wc -l)"
  if [ "$code" != "200" ] || [ "$rows" != "6" ]; then
    fail "--cpus 1 --memory 1g: small model load $code, $rows answer rows"
  fi
  code="$(post_model "$port" big)"
  [ "$code" = "507" ] || fail "--cpus 1 --memory 1g: a model past the budget answered $code, not 507"
  rows="$(curl -fs --max-time 10 -H 'Content-Type: text/csv' -H 'Accept: text/csv' \
    --data-binary @"$here/payloads/dense.csv" "http://127.0.0.1:$port/models/small/invoke" | wc -l)"
  state="$(docker inspect -f 'running={{.State.Running}} oomkilled={{.State.OOMKilled}} restarts={{.RestartCount}}' "$container")"
  if [ "$rows" = "6" ] && [ "$state" = "running=true oomkilled=false restarts=0" ]; then
    record "1 CPU, 1 GiB" "$line; big model 507; still answering, $state"
  else
    show_logs "$container"
    fail "--cpus 1 --memory 1g after the 507: $rows answer rows, $state"
    record "1 CPU, 1 GiB" "FAILED: $state"
  fi
  stop_gracefully "$container" "1 CPU, 1 GiB"
}

# `--cpus 3` on a machine with fewer CPUs: the quota is above the affinity mask, which wins.
limits_above_machine() {
  local port container="$name_prefix-cpus3" line cpus
  cpus="$(nproc)"
  port="$(free_port)"
  containers+=("$container")
  docker run -d --name "$container" --cpus 3 -p "127.0.0.1:$port:8080" \
    -v "$workdir/kmeans/model:/opt/ml/model:ro" "$image" serve >/dev/null
  if wait_for_ping "$port" "$container"; then
    line="$(sizing_line "$container")"
    local expected=$((cpus < 3 ? cpus : 3))
    if [[ "$line" == *": $expected workers x "* ]]; then
      record "--cpus 3" "on $cpus CPUs: $line"
    else
      fail "--cpus 3 on $cpus CPUs: sized as: $line (expected $expected workers)"
      record "--cpus 3" "FAILED: $line"
    fi
  else
    show_logs "$container"
    fail "--cpus 3: no 200 on /ping"
    record "--cpus 3" "FAILED: no 200 on /ping"
  fi
  docker rm -f "$container" >/dev/null 2>&1 || true
}

# --- 6./7. the SageMaker SDK's local mode; the KServe pod -----------------------------------------

# Labels for the summary, by module of tests/local_mode.
declare -A module_labels=(
  [test_sdk_local_mode]="sdk model deploy"
  [test_sdk_train_deploy]="sdk train+deploy"
  [test_kserve_pod]="kserve pod"
)

# tests/local_mode with the real SDK, through Docker Compose against this engine:
# Model.deploy(instance_type="local") from a file:// model.tar.gz for both algorithms; the
# whole Estimator workflow (fit, deploy, Predictor in CSV and RecordIO, a local Batch Transform
# in several mini-batches, endpoint deleted) for both. Adds to the caller's `files`.
sdk_modules() {
  if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
    fail "the SDK's local mode needs Docker Compose: apt-get install docker-compose"
    record "sdk local mode" "FAILED: no docker compose / docker-compose"
    return
  fi
  files+=(tests/local_mode/test_sdk_local_mode.py tests/local_mode/test_sdk_train_deploy.py)
}

# The KServe manifest's predictor played as a Deployment by podman. Where the engine is not
# podman, the image is copied into podman's store first. Adds to the caller's `files`.
kserve_module() {
  if ! command -v podman >/dev/null; then
    fail "the KServe pod test needs podman and catatonit: bash local_test/container_engine.sh"
    record "kserve pod" "FAILED: no podman"
    return
  fi
  if [[ "${DOCKER_HOST:-}" != *podman* ]] && ! podman image exists "$image"; then
    docker save "$image" | podman load >/dev/null || die "could not copy $image into podman"
  fi
  files+=(tests/local_mode/test_kserve_pod.py)
}

# One pytest run (the SDK's import alone takes seconds), each module's result and time recorded.
local_mode_tests() {
  local pytest="$repo_root/.venv/bin/pytest" report="$workdir/local_mode.xml" status=0 files=()
  if [ "${SMSERVE_SKIP_LOCAL_MODE:-0}" = "1" ]; then
    record "sdk local mode" "skipped (SMSERVE_SKIP_LOCAL_MODE=1)"
  else
    sdk_modules
  fi
  if [ "${SMSERVE_SKIP_KSERVE:-0}" = "1" ]; then
    record "kserve pod" "skipped (SMSERVE_SKIP_KSERVE=1)"
  else
    kserve_module
  fi
  [ "${#files[@]}" -gt 0 ] || return 0
  if [ ! -x "$pytest" ]; then
    fail "no $pytest: ./run-tests creates .venv with the test dependencies"
    record "local mode tests" "FAILED: no .venv"
    return
  fi
  log "pytest ${files[*]} against $image"
  (cd "$repo_root" && SMSERVE_LOCAL_MODE_IMAGE="$image" "$pytest" -q -p no:cacheprovider \
    --junitxml="$report" "${files[@]}") >&2 || status=$?
  [ "$status" -eq 0 ] || fail "tests/local_mode failed (pytest exit $status)"
  [ -s "$report" ] || return 0
  local module outcome
  while read -r module outcome; do
    record "${module_labels[$module]:-$module}" "$outcome"
  done < <(module_results "$report")
}

# module_results REPORT: "<module> <N passed|FAILED ...> in <s> s" per module of a JUnit report.
module_results() {
  "$python" - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

tests, failed, seconds = defaultdict(int), defaultdict(int), defaultdict(float)
for case in ET.parse(sys.argv[1]).iter("testcase"):
    module = case.get("classname", "").split(".")[-1]
    tests[module] += 1
    failed[module] += any(case.find(tag) is not None for tag in ("failure", "error"))
    seconds[module] += float(case.get("time", 0))
for module in tests:
    verdict = f"FAILED {failed[module]} of {tests[module]}" if failed[module] else f"{tests[module]} passed"
    print(f"{module} {verdict} in {seconds[module]:.1f} s (setup and teardown included)")
PY
}

# --- main ---------------------------------------------------------------------------------------

main() {
  local started trained=()
  started="$(now)"
  ensure_engine
  timed build build_image
  check_image
  for algorithm in xgboost kmeans; do
    if timed "train $algorithm" train "$algorithm"; then trained+=("$algorithm"); fi
  done
  timed "failing train" train_must_fail
  timed "multi-host pod" bash "$here/multihost_pod_test.sh" "$image" || fail "multi-host pod test"
  for algorithm in "${trained[@]+"${trained[@]}"}"; do
    timed "serve $algorithm" serve_and_check "$algorithm"
  done
  if [[ " ${trained[*]+"${trained[*]}"} " == *" kmeans "* ]]; then
    timed bind-to-port bind_to_port
    timed "--cpus 3" limits_above_machine
  fi
  if [[ " ${trained[*]+"${trained[*]}"} " == *" xgboost "* ]]; then
    timed "read-only archive" archive_read_only
    timed "1 CPU, 1 GiB" limits_serverless
  fi
  timed "tests/local_mode" local_mode_tests
  [ "${SMSERVE_SKIP_LOCAL_MODE:-0}" = "1" ] || while IFS=$'\t' read -r label text; do record "$label" "$text"; [[ "$text" != FAILED* ]] || fail "$label: $text"; done < <(bash "$here/sdk_v3_test.sh" "$image" || true)

  echo
  echo "================ container_test summary ================"
  echo "image                  $image"
  printf '%s\n' "${summary[@]}"
  local step
  echo "step times:"
  for step in "${step_times[@]+"${step_times[@]}"}"; do echo "  $step"; done
  echo "total time             $(elapsed "$started" "$(now)") s"
  if [ "$failures" -eq 0 ]; then
    echo "RESULT                 PASS"
  else
    echo "RESULT                 FAIL ($failures failure(s); see FAIL lines above)"
  fi
  echo "========================================================"
  [ "$failures" -eq 0 ]
}

main "$@"
