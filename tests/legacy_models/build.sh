#!/usr/bin/env bash
# Builds .legacy-models/: for each XGBoost release a SageMaker built-in shipped (0.90 ... 3.0.5),
# its wheel installed into a folder of its own beside numpy<2 (never into .venv), then
# make_artifacts.py run under it to write that era's model files and reference predictions
# into .legacy-models/<version>/. tests/unit/algorithms/xgboost/test_legacy_artifacts.py
# compares smserve's answers with them. A rerun with the same scripts and versions reuses the
# folder (its key file); run-tests starts this beside the other installs.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.legacy-models
versions=(0.90 1.0.0 1.2.0 1.3.3 1.5.2 1.7.4 2.0.3 3.0.5)
key="$(cat tests/legacy_models/make_artifacts.py tests/legacy_models/build.sh | sha256sum | cut -c1-16)"
if [ -f "$out/key" ] && [ "$(cat "$out/key")" = "$key" ]; then
  echo "legacy models: $out is up to date (key $key)"
  exit 0
fi
rm -rf "$out"
mkdir -p "$out/wheels" "$out/env"
pip_quiet=(-q --disable-pip-version-check --no-deps --only-binary=:all:)
python3 -m pip download "${pip_quiet[@]}" -d "$out/wheels" "numpy<2" "scipy<1.14"
python3 -m pip install "${pip_quiet[@]}" --target "$out/env/numpy" "$out"/wheels/numpy-* "$out"/wheels/scipy-*
for version in "${versions[@]}"; do
  python3 -m pip download "${pip_quiet[@]}" -d "$out/wheels/$version" "xgboost==$version"
  python3 -m pip install "${pip_quiet[@]}" --target "$out/env/xgb-$version" "$out/wheels/$version"/xgboost-*
  PYTHONPATH="$out/env/xgb-$version:$out/env/numpy" OMP_NUM_THREADS=1 \
    python3 -s tests/legacy_models/make_artifacts.py "$out/$version"
  echo "legacy models: wrote $out/$version"
done
rm -rf "$out/wheels" "$out/env"
echo "$key" >"$out/key"
