"""The project's own hostile suite: every attack of hostile_cases.py through the real server
(``smserve serve``: nginx in front of gunicorn, 2 workers, default settings otherwise), one
case at a time, each measured from /proc: the largest gunicorn worker's and nginx's (all its
processes') peak RSS growth during the case (VmHWM, reset before it, against VmRSS), the
answer's time, status and JSON envelope; and after each case a normal request must get the
right prediction, from the same workers (none restarted).

Two servers run side by side: ``single`` (SM_MODEL_DIR: an XGBoost model whose own feature
names are f0..f49, behind SageMaker's, TF Serving's and V2's doors) and ``mme`` (a
multi-model endpoint with ``xgboost``, unnamed, and ``kmeans`` registered, and model folders
that link outside its models directory).

Targets (issue 21): every case answers within 1 s, with the expected 4xx (never >= 500) in
the JSON envelope, worker growth under 200 MB, nginx growth under 100 MB, healthy after.
Prints one line per case and a Markdown table (``--markdown``); exits 1 when a case misses.

    .venv/bin/python bench/hostile/hostile.py [--sample] [--only NAME ...] [--markdown] \\
        [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import xgboost as xgb

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.hostile import hostile_cases as cases  # noqa: E402
from bench.hostile.hostile_wire import MB, Tree, exchange, request  # noqa: E402
from bench.shared import harness  # noqa: E402

TIME_S, WORKER_MB, NGINX_MB = 1.0, 200, 100  # the targets
WORKERS = 2


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    health_path: str
    expected: float  # the health request's right answer

    def healthy(self) -> bool:
        answers = exchange(self.port, request("POST", self.health_path, cases.ROW.encode(),
                                              {"Content-Type": "text/csv"}))  # fmt: skip
        if not answers or answers[0].status != 200:
            return False
        return abs(float(answers[0].body.decode().strip()) - self.expected) < 1e-6


@dataclass
class Row:
    case: str
    group: str
    status: int | None
    seconds: float
    worker_mb: float
    nginx_mb: float
    envelope: bool
    healthy: bool
    misses: list[str]
    detail: str


def main() -> int:
    args = _arguments()
    chosen = [c for c in cases.all_cases() if _chosen(c, args)]
    with tempfile.TemporaryDirectory() as scratch, servers(Path(scratch)) as running:
        rows = [run(case, running[case.server]) for case in chosen]
    _report(rows, args)
    return 1 if any(row.misses for row in rows) else 0


def _chosen(case: cases.Case, args: argparse.Namespace) -> bool:
    if args.only:
        return case.name in args.only
    return case.sample or not args.sample


def run(case: cases.Case, server: Server) -> Row:
    tree = Tree.of(server.process.pid)
    before = tree.reset_peaks()
    outcome = case.run(server.port)
    worker, nginx = tree.growth(before)
    healthy = server.healthy() and Tree.of(server.process.pid).workers == tree.workers
    row = Row(case.name, case.group, outcome.status, outcome.seconds, worker / MB, nginx / MB,
              outcome.envelope, healthy, [], outcome.detail)  # fmt: skip
    row.misses = _misses(row, case.expect)
    print(_line(row), flush=True)
    return row


def _misses(row: Row, expect: tuple[int, ...]) -> list[str]:
    misses = []
    if row.status is None or row.status >= 500:
        misses.append(f"status {row.status}")
    elif expect and row.status not in expect:
        misses.append(f"expected {'/'.join(map(str, expect))}")
    if row.seconds > TIME_S:
        misses.append(f"over {TIME_S:g} s")
    if row.worker_mb > WORKER_MB:
        misses.append(f"worker over {WORKER_MB} MB")
    if row.nginx_mb > NGINX_MB:
        misses.append(f"nginx over {NGINX_MB} MB")
    if not row.envelope:
        misses.append("no JSON envelope")
    if not row.healthy:
        misses.append("unhealthy after")
    return misses


@contextlib.contextmanager
def servers(scratch: Path) -> Iterator[dict[str, Server]]:
    single_dir, models_dir = scratch / "single", scratch / "models"
    named = _xgboost(single_dir, _NAMES)
    unnamed = _xgboost(models_dir / "xgboost", None)
    harness.build_kmeans(models_dir / "kmeans")
    _links(scratch, models_dir)
    row = np.full((1, harness.N_FEATURES), 0.5, np.float32)
    expect = [float(b.predict(xgb.DMatrix(row, feature_names=n))[0]) for b, n in
              ((named, _NAMES), (unnamed, None))]  # fmt: skip
    single = _start("single", {"SM_MODEL_DIR": str(single_dir)}, "/invocations", expect[0])
    mme = _start("mme", {"SAGEMAKER_MULTI_MODEL": "true", "SMSERVE_MODELS_DIR": str(models_dir)},
                 "/models/xgboost/invoke", expect[1])  # fmt: skip
    try:
        for server in (single, mme):
            harness.wait_ready(server.port, server.process, "/ping", 120)
        harness.register_models(mme.port, ("xgboost", "kmeans"))
        _warm(single, mme)
        yield {cases.XGB_NAMED: single, cases.MME: mme}
    finally:
        for server in (single, mme):
            server.process.terminate()
            server.process.wait(timeout=60)


_NAMES = [f"f{i}" for i in range(harness.N_FEATURES)]


def _xgboost(model_dir: Path, names: list[str] | None) -> xgb.Booster:
    """A small XGBoost on harness's 50 features, with its own ``names`` (the issue's case is
    literally f0..f49) or none. One thread and 20 trees: the attacks do not depend on the
    model's size, and training with every thread of a busy 2-core machine took 45 s."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, harness.N_FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1, "seed": 0, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(x, label=y, feature_names=names), 20)
    model_dir.mkdir(parents=True)
    (model_dir / "xgboost-model").write_bytes(booster.save_raw("json"))
    return booster


def _links(scratch: Path, models_dir: Path) -> None:
    """Model folders inside the models directory that lead outside it."""
    outside = scratch / "outside" / "model"
    outside.mkdir(parents=True)
    shutil.copy(models_dir / "xgboost" / "xgboost-model", outside / "xgboost-model")
    (models_dir / "linked-file").mkdir()
    (models_dir / "linked-file" / "xgboost-model").symlink_to(outside / "xgboost-model")
    (models_dir / "linked-folder").symlink_to(outside)
    (models_dir / "passwd-link").mkdir()
    (models_dir / "passwd-link" / "xgboost-model").symlink_to("/etc/passwd")


def _start(name: str, env: dict[str, str], health: str, expected: float) -> Server:
    port = harness.free_port()
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SAGEMAKER_", "SMSERVE_"))}
    environ = {**keep, **env, "SAGEMAKER_BIND_TO_PORT": str(port),
               "SAGEMAKER_MODEL_SERVER_WORKERS": str(WORKERS)}  # fmt: skip
    process = subprocess.Popen([harness.SMSERVE, "serve"], env=environ, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    return Server(name, port, process, health, expected)


def _warm(*servers: Server) -> None:
    """A few requests of each kind first, so that no case pays for a worker's first use of a
    library (pyarrow's modules, XGBoost's threads)."""
    warm = cases.all_cases()
    kinds = ["arrow-declares-1tib", "parquet-declares-1e12-rows", "sm-json-deep", "tfs-json-deep",
             "v2-json-deep", "libsvm-index-2147483646", "arrow-stream-zstd-2gib-named"]  # fmt: skip
    ports = {server.name: server.port for server in servers}
    for _ in range(2 * WORKERS):
        for server in servers:
            server.healthy()
        for case in warm:
            if case.name in kinds:
                case.run(ports[case.server])
    time.sleep(0.5)


def _line(row: Row) -> str:
    verdict = "ok" if not row.misses else "MISS: " + ", ".join(row.misses)
    return (
        f"{row.case:34s} {row.status!s:>4} {row.seconds:7.3f} s  worker {row.worker_mb:+7.1f} MB"
        f"  nginx {row.nginx_mb:+6.1f} MB  {verdict}  | {' '.join(row.detail.split())[:90]}"
    )


def _report(rows: list[Row], args: argparse.Namespace) -> None:
    print(f"hostile: {len(rows)} cases, {sum(not r.misses for r in rows)} met every target")
    if args.markdown:
        print(MARKDOWN_HEAD)
        for r in rows:
            print(markdown_row(r))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))


MARKDOWN_HEAD = (
    "\n| case | status | time | worker RSS growth | nginx RSS growth | healthy after | result |"
    "\n|---|---|---|---|---|---|---|"
)


def markdown_row(r: Row) -> str:
    result = "ok" if not r.misses else ", ".join(r.misses)
    return (
        f"| {r.case} | {r.status} | {r.seconds * 1000:.0f} ms | {r.worker_mb:+.1f} MB "
        f"| {r.nginx_mb:+.1f} MB | {'yes' if r.healthy else 'no'} | {result} |"
    )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true", help="only the cases CI runs")
    parser.add_argument("--only", nargs="*", help="these cases by name")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument("--json", help="write the rows to this file")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
