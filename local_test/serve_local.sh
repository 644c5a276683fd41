#!/usr/bin/env bash
# Serve the model in test_dir/model the way SageMaker does (`docker run IMAGE serve`, port 8080),
# in the foreground; Ctrl-C stops it (SIGINT is passed on; the server drains and exits).
#
#   local_test/serve_local.sh IMAGE [DOCKER RUN OPTIONS...]
#
#   e.g. local_test/serve_local.sh smserve:test -e SAGEMAKER_MODEL_SERVER_WORKERS=2
#   PORT      environment override of the host port (default 8080).
#   TEST_DIR  environment override of the folder mounted as /opt/ml (default: local_test/test_dir).
# Then, in another terminal: local_test/predict.sh local_test/payloads/dense.csv
set -euo pipefail

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h | --help) usage ;; esac

image="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
test_dir="$(cd "${TEST_DIR:-$here/test_dir}" && pwd)"
port="${PORT:-8080}"

if [ -z "$(ls -A "$test_dir/model" 2>/dev/null)" ]; then
  echo "serve_local: $test_dir/model is empty; run local_test/train_local.sh $image first" >&2
  exit 1
fi

echo "serve_local: docker run $image serve on http://localhost:$port (model: $test_dir/model)"
exec docker run --rm --stop-timeout 30 \
  -v "$test_dir:/opt/ml" \
  -p "$port:8080" \
  "$@" \
  "$image" serve
