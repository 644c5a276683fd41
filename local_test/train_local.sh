#!/usr/bin/env bash
# Train inside the image the way SageMaker does: test_dir is mounted as /opt/ml and the
# container runs `train`; the model lands in test_dir/model, a failure reason in
# test_dir/output/failure.
#
#   local_test/train_local.sh IMAGE [ALGORITHM]
#
#   ALGORITHM  xgboost (default) or kmeans: picks input/config/hyperparameters-ALGORITHM.json,
#              mounted over /opt/ml/input/config/hyperparameters.json (the files stay untouched).
#   TEST_DIR   environment override of the folder mounted as /opt/ml (default: local_test/test_dir).
set -euo pipefail

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
case "$1" in -h | --help) usage ;; esac

image="$1"
algorithm="${2:-xgboost}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
test_dir="$(cd "${TEST_DIR:-$here/test_dir}" && pwd)"
hyperparameters="$test_dir/input/config/hyperparameters-${algorithm}.json"

if [ ! -f "$hyperparameters" ]; then
  echo "train_local: no $hyperparameters; algorithms with a file:" >&2
  ls "$test_dir/input/config" | sed -n 's/^hyperparameters-\(.*\)\.json$/  \1/p' >&2
  exit 2
fi

echo "train_local: emptying $test_dir/model and $test_dir/output"
rm -rf "$test_dir/model" "$test_dir/output"
mkdir -p "$test_dir/model" "$test_dir/output"

# A named container removed afterwards rather than `docker run --rm`: podman's Docker API
# (local_test/container_test.sh's fallback engine) reports exit status 0 for --rm containers.
container="smserve-train-$$"
trap 'docker rm -f "$container" >/dev/null 2>&1 || true' EXIT
echo "train_local: docker run $image train  (algorithm $algorithm, /opt/ml = $test_dir)"
status=0
docker run --name "$container" \
  -v "$test_dir:/opt/ml" \
  -v "$hyperparameters:/opt/ml/input/config/hyperparameters.json:ro" \
  "$image" train || status=$?

if [ "$status" -ne 0 ]; then
  echo "train_local: training FAILED (exit $status)" >&2
  if [ -f "$test_dir/output/failure" ]; then
    echo "train_local: output/failure says:" >&2
    sed 's/^/  /' "$test_dir/output/failure" >&2
  fi
  exit "$status"
fi
echo "train_local: training succeeded; model files:"
ls -l "$test_dir/model"
