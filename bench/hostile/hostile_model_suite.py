"""The hostile-model suite: each case of hostile_models.py written to a model folder and loaded
in a process of its own as a worker loads it (``XGBoost.load``, then the fast predictor's
build and check, run to the end), then asked for one row's prediction; measured per case: the
outcome (refused with a ModelLoadError, served, or crashed with its signal), and up to the
end of the load (the prediction's cost is the request's), the peak RSS growth over the
process's state after its imports (VmHWM) and the time from the load's start.

Targets (issue 32): every case refused or served, never a crash; each under 200 MB and 2 s;
every refusal names the tree (or the iteration). Prints one line per case; ``--json FILE``
writes the rows; exits 1 when a case misses.

    .venv/bin/python bench/hostile/hostile_model_suite.py [--sample] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.hostile.hostile_models import CASES, ModelCase, case_document  # noqa: E402

PEAK_MB, TIME_S = 200, 2.0

_CHILD = r"""
import json, sys, time
from dataclasses import replace
from pathlib import Path
import numpy as np, scipy.sparse as sp
from smserve.algorithms.xgboost import fast
from smserve.algorithms.xgboost.algorithm import XGBoost, _xgboost_predict
from smserve.config import Settings
from smserve.errors import ModelLoadError
from smserve.types import Batch

def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) * 1024

def answer(**row):
    row.update(seconds=time.perf_counter() - start, peak=status("VmHWM") - base)
    print(json.dumps(row), flush=True)

base = status("VmRSS")
start = time.perf_counter()
try:
    model = XGBoost.load(Settings(fast_predictor="off"), Path(sys.argv[1]))
except ModelLoadError as exc:
    answer(outcome="refused", detail=str(exc))
    sys.exit(0)
member = replace(model.members[0], fast=fast.FastSlot())
choice = fast.build(member, _xgboost_predict) if fast.AVAILABLE else None
seconds, peak = time.perf_counter() - start, status("VmHWM") - base
width = model.n_features or 1
row = sp.csr_matrix((np.ones(4, np.float32), np.arange(4), [0, 4]), shape=(1, width))
score = model.predict(Batch(row)).outputs["score"]
detail = f"fast predictor: {choice and choice.max_rows}; a row scores {float(score[0]):.4f}"
print(json.dumps(dict(outcome="served", detail=detail, seconds=seconds, peak=peak)))
"""


@dataclass
class Row:
    name: str
    timed: bool
    expected: str
    outcome: str
    seconds: float
    peak_mb: float
    detail: str

    @property
    def missed(self) -> list[str]:
        problems = []
        if self.outcome not in ("refused", "served"):
            problems.append(self.outcome)
        elif self.expected not in ("either", self.outcome):
            problems.append(f"{self.outcome}, expected {self.expected}")
        if self.peak_mb > PEAK_MB:
            problems.append(f"{self.peak_mb:.0f} MB")
        if self.timed and self.seconds > TIME_S:
            problems.append(f"{self.seconds:.2f} s")
        return problems


def run_case(case: ModelCase, folder: Path, timeout_s: float = 60.0) -> Row:
    model_dir = folder / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "xgboost-model").write_bytes(json.dumps(case_document(case)).encode())
    expected = "either" if case.refused is None else ("refused" if case.refused else "served")
    command = [sys.executable, "-c", _CHILD, str(model_dir)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Row(case.name, case.timed, expected, "timed out", timeout_s, 0.0, "")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        outcome = f"crashed (signal {-done.returncode})" if done.returncode < 0 else "failed"
        return Row(case.name, case.timed, expected, outcome, 0.0, 0.0, done.stderr[-300:])
    found = json.loads(lines[-1])
    peak_mb = found["peak"] / 2**20
    return Row(
        case.name,
        case.timed,
        expected,
        found["outcome"],
        found["seconds"],
        peak_mb,
        found["detail"],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true", help="the sample CI runs")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    chosen = [case for case in CASES if case.sample or not args.sample]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hostile-models-") as scratch:
        for index, case in enumerate(chosen):
            row = run_case(case, Path(scratch) / str(index))
            rows.append(row)
            verdict = "ok" if not row.missed else "MISS " + ", ".join(row.missed)
            print(
                f"{row.name:36s} {row.outcome:10s} {row.seconds:5.2f} s {row.peak_mb:6.1f} MB "
                f"{verdict}  {row.detail[:110]}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 1 if any(r.missed for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
