#!/usr/bin/env bash
# A two-host training job from two containers of the image in one podman pod: the containers
# share the pod's network namespace, so the hosts talk over its loopback. The pod maps the host
# names algo-1 and algo-2 to 127.0.0.2 and 127.0.0.3 (--add-host), as SageMaker's DNS would;
# each container gets its own /opt/ml (resourceconfig.json naming itself, half of
# local_test/test_dir's rows as a ShardedByS3Key shard).
#
#   local_test/multihost_pod_test.sh [IMAGE]     (default: $SMSERVE_TEST_IMAGE or smserve:test)
#
# Checks: XGBoost and k-means each exit 0 on both hosts with the model in algo-1's
# /opt/ml/model only; bad data on algo-2 makes both exit 1, each output/failure naming its
# host (algo-1's: "stopped because host algo-2 failed"). While a job runs, the pod's listening
# TCP sockets are read from its network namespace every 20 ms (/proc/PID/net/tcp and tcp6):
# each must be on 127.0.0.2 or 127.0.0.3, none on the wildcard address or the pod's own
# interface. Every run is bounded (timeout).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
image="${1:-${SMSERVE_TEST_IMAGE:-smserve:test}}"
run_timeout_s=300
pod="smserve-multihost-$$"
workdir="$(mktemp -d "${TMPDIR:-/tmp}/smserve-multihost.XXXXXX")"
failures=0

log() { printf 'multihost_pod_test: %s\n' "$*" >&2; }
fail() { failures=$((failures + 1)); log "FAIL: $*"; }
cleanup() {
  podman pod rm -f "$pod" >/dev/null 2>&1 || true
  rm -rf "$workdir"
}
trap cleanup EXIT

command -v podman >/dev/null || { log "FATAL: needs podman (bash local_test/container_engine.sh)"; exit 1; }
if ! podman image exists "$image"; then
  log "copying $image from docker into podman's store"
  docker save "$image" | podman load >/dev/null || { log "FATAL: no image $image"; exit 1; }
fi

# layout ALGORITHM HOST HALF: HOST's /opt/ml under $workdir/ALGORITHM (HALF: 0 or 1 of the rows).
layout() {
  local algorithm="$1" host="$2" half="$3" base="$workdir/$1/$2"
  mkdir -p "$base/input/config" "$base/input/data/train" "$base/model" "$base/output"
  cp "$here/test_dir/input/config/hyperparameters-$algorithm.json" \
    "$base/input/config/hyperparameters.json"
  printf '{"train": {"ContentType": "text/csv", "TrainingInputMode": "File", %s}}\n' \
    '"S3DistributionType": "ShardedByS3Key"' >"$base/input/config/inputdataconfig.json"
  printf '{"current_host": "%s", "hosts": ["algo-1", "algo-2"], %s}\n' "$host" \
    '"network_interface_name": "eth0"' >"$base/input/config/resourceconfig.json"
  awk -v half="$half" 'NR % 2 == half' "$here/test_dir/input/data/train/train.csv" \
    >"$base/input/data/train/train.csv"
  chmod -R a+rwX "$base"
}

# listeners PID OUT: while PID runs, appends the listening sockets of its network namespace
# (hex address:port, as /proc/net/tcp{,6} write them; state 0A is LISTEN) to OUT.
listeners() {
  while [ -d "/proc/$1" ]; do
    awk '$4 == "0A" { print $2 }' "/proc/$1/net/tcp" "/proc/$1/net/tcp6" >>"$2" 2>/dev/null || true
    sleep 0.02
  done
}

# job ALGORITHM: starts both hosts in a fresh pod; prints "EXIT1 EXIT2" when both have ended.
# The pod's listening sockets while they ran are in $workdir/ALGORITHM.listeners.
job() {
  local algorithm="$1" host status=() pid
  podman pod rm -f "$pod" >/dev/null 2>&1 || true
  podman pod create --name "$pod" --add-host algo-1:127.0.0.2 --add-host algo-2:127.0.0.3 \
    >/dev/null
  for host in algo-1 algo-2; do
    podman run -d --pod "$pod" --name "$pod-$algorithm-$host" \
      -v "$workdir/$algorithm/$host:/opt/ml" -e SMSERVE_COLLECTIVE_TIMEOUT_S=60 \
      "$image" train >/dev/null
    pid="$(podman inspect -f '{{.State.Pid}}' "$pod-$algorithm-$host" 2>/dev/null || echo 0)"
    if [ "$pid" -gt 0 ]; then listeners "$pid" "$workdir/$algorithm.listeners" & fi
  done
  for host in algo-1 algo-2; do
    status+=("$(timeout "$run_timeout_s" podman wait "$pod-$algorithm-$host" || echo timeout)")
  done
  for host in algo-1 algo-2; do
    podman logs "$pod-$algorithm-$host" >"$workdir/$algorithm-$host.log" 2>&1 || true
  done
  wait
  echo "${status[*]}"
}

# check_listeners ALGORITHM: every listening socket seen during its job on 127.0.0.2 or
# 127.0.0.3 (0200007F / 0300007F in /proc's little-endian hex), and at least one seen.
check_listeners() {
  local seen="$workdir/$1.listeners" others
  if [ ! -s "$seen" ]; then
    fail "$1: no listening socket was seen in the pod while the job ran"
    return
  fi
  others="$(cut -d: -f1 "$seen" | sort -u | grep -v -x -e 0200007F -e 0300007F || true)"
  if [ -n "$others" ]; then
    fail "$1: sockets listened on other addresses (hex, as /proc/net/tcp writes them): $others"
  else
    log "PASS: $1: $(sort -u "$seen" | wc -l) listening socket(s) seen, each on 127.0.0.2 or 127.0.0.3"
  fi
}

show() { log "logs of $1:"; tail -n 30 "$workdir/$1.log" | sed 's/^/    /' >&2 || true; }

check_success() {
  local algorithm="$1" model="$2" statuses
  layout "$algorithm" algo-1 0
  layout "$algorithm" algo-2 1
  statuses="$(job "$algorithm")"
  if [ "$statuses" != "0 0" ]; then
    show "$algorithm-algo-1"; show "$algorithm-algo-2"
    fail "$algorithm: exit statuses $statuses (expected 0 0)"
  elif [ ! -f "$workdir/$algorithm/algo-1/model/$model" ]; then
    fail "$algorithm: no $model from the master algo-1"
  elif [ -n "$(ls -A "$workdir/$algorithm/algo-2/model")" ]; then
    fail "$algorithm: algo-2 wrote a model; only the master may"
  else
    log "PASS: $algorithm across two hosts in one pod; $model written by algo-1 only"
  fi
  check_listeners "$algorithm"
}

check_bad_data() {
  local statuses
  layout xgboost algo-1 0
  layout xgboost algo-2 1
  printf '1,2,x\n' >"$workdir/xgboost/algo-2/input/data/train/train.csv"
  statuses="$(job xgboost)"
  local one="$workdir/xgboost/algo-1/output/failure" two="$workdir/xgboost/algo-2/output/failure"
  if [ "$statuses" != "1 1" ]; then
    show xgboost-algo-1; show xgboost-algo-2
    fail "bad data on algo-2: exit statuses $statuses (expected 1 1)"
  elif ! grep -q '^host algo-1: stopped because host algo-2 failed' "$one" \
    || ! grep -q '^host algo-2: ' "$two"; then
    fail "bad data on algo-2: the failure files do not name the hosts"
  else
    log "PASS: bad data on algo-2 ends both hosts, exit 1, each failure file names its host"
  fi
}

check_success xgboost xgboost-model
check_success kmeans model_algo-1
check_bad_data
if [ "$failures" -eq 0 ]; then log "RESULT PASS"; else log "RESULT FAIL ($failures)"; fi
[ "$failures" -eq 0 ]
