"""One row per request under wrk (a C load generator), side by side in one run: the nginx
fixed-body floor, smserve's /invocations (CSV) and V2 REST, MLServer 1.7.1's V2 REST and the
AWS built-in XGBoost container's serving code, at 1, 16 and 64 connections.

Why wrk, and how its figures are read: ``bench/shared/wrk.py``.

Servers, each started in turn for each model, with ``--workers`` workers:

* floor: nginx answering a fixed body itself behind the same proxy hop as ours (a listening
  server proxying, with upstream keep-alive, to a second server on a unix socket that
  ``return``s the body): what wrk, loopback and one proxy hop cost;
* smserve: ``smserve serve`` through its nginx (``--src`` runs another tree's sources for an
  A/B); measured once its fast predictor serves (the log says so per worker);
* MLServer 1.7.1 + mlserver-xgboost from its own environment (``--mlserver PATH``, skipped when
  absent), ``parallel_workers`` 0: its fastest configuration for one row (bench/peers/peers.py;
  launched by bench/shared/mlserver.py);
* AWS: aws/sagemaker-xgboost-container's ``src/`` (``--aws-src``, skipped when absent): its
  algorithm-mode Flask app under gunicorn with gevent workers and keep-alive 60, as its
  ``ScoringService.start`` runs it, OMP_NUM_THREADS=1 as its serving entry point sets, from a
  Python environment with its dependencies (``--aws-python``)::

      python3 -m venv /work/venvs/aws-xgboost
      /work/venvs/aws-xgboost/bin/pip install sagemaker-containers==2.8.6.post2 gevent six \\
          flask gunicorn xgboost scipy psutil

Models: ``bench`` (harness.build_xgboost: binary:logistic, 100 trees, depth 6, 50 features)
and ``big`` (harness.build_big: 1,000 full trees of depth 8, 100 features).

    flock /tmp/smserve-bench.lock .venv/bin/python bench/peers/http_wrk.py \\
        --mlserver /work/venvs/mlserver/bin/mlserver \\
        --aws-src /path/to/sagemaker-xgboost-container/src \\
        --aws-python /work/venvs/aws-xgboost/bin/python
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.peers import wrk_servers  # noqa: E402
from bench.shared import harness, mlserver, proxied, wrk  # noqa: E402
from bench.shared.wrk import Cell, Request  # noqa: E402

READY = re.compile(r"fast predictor serves|XGBoost answers|XGBoost is faster|refused")
FLOOR = "floor (nginx fixed body)"


def main() -> None:
    args = _arguments()
    wrk.ensure_installed()
    results: dict[str, dict[str, dict[int, Cell]]] = {}
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        for model in args.models:
            model_dir = scratch / model
            n_features = _build(model, model_dir)
            results[model] = _run_model(args, model_dir, n_features, scratch / f"{model}-run")
            _report(model, results[model], args.connections)
    print(
        json.dumps(
            {
                m: {s: {c: vars(x) for c, x in r.items()} for s, r in v.items()}
                for m, v in results.items()
            }
        )
    )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlserver", default="", help="MLServer 1.7.1's mlserver executable")
    parser.add_argument("--aws-src", default="", help="sagemaker-xgboost-container's src/")
    parser.add_argument("--aws-python", default="", help="a Python with its dependencies")
    parser.add_argument("--src", default="", help="serve another tree's src (PYTHONPATH)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=5, help="per cell")
    parser.add_argument("--connections", type=_ints, default=[1, 16, 64])
    parser.add_argument("--models", type=lambda s: s.split(","), default=["bench", "big"])
    parser.add_argument(
        "--servers",
        type=lambda s: s.split(","),
        default=["all"],
        help="floor,smserve,mlserver,aws (default all)",
    )
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for smserve")
    return parser.parse_args()


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def _build(model: str, model_dir: Path) -> int:
    if model == "big":
        harness.build_big(model_dir)
        return 100
    harness.build_xgboost(model_dir)
    return harness.N_FEATURES


def _run_model(
    args: argparse.Namespace, model_dir: Path, n_features: int, scratch: Path
) -> dict[str, dict[int, Cell]]:
    scratch.mkdir()
    row = harness.rows(1).repeat(2, axis=1)[:, :n_features] if n_features > 50 else harness.rows(1)
    csv = Request("/invocations", harness.csv_body(row), "text/csv")
    v2 = Request("/v2/models/model/infer", harness.v2_body(row), "application/json")
    wanted = set(args.servers)
    out: dict[str, dict[int, Cell]] = {}
    if wanted & {"all", "floor"}:
        with wrk_servers.floor_server(scratch / "floor") as port:
            out[FLOOR] = _cells(port, csv, args, scratch)
    if wanted & {"all", "smserve"}:
        with _smserve(args, model_dir, scratch / "smserve.log") as port:
            out["smserve /invocations CSV"] = _cells(port, csv, args, scratch)
            out["smserve V2 REST"] = _cells(port, v2, args, scratch)
    if wanted & {"all", "mlserver"}:
        if args.mlserver and Path(args.mlserver).exists():
            with mlserver.mlserver(Path(args.mlserver), model_dir, scratch / "mls", 0) as ports:
                path = f"/v2/models/{mlserver.MODEL}/infer"
                request = Request(path, v2.body, v2.content_type)
                out["MLServer 1.7.1 V2 REST"] = _cells(ports.http, request, args, scratch)
        else:
            print("SKIPPED MLServer: give --mlserver PATH to MLServer 1.7.1's executable")
    if wanted & {"all", "aws"}:
        if args.aws_src and Path(args.aws_src, "sagemaker_xgboost_container").is_dir():
            with wrk_servers.aws_server(args, model_dir, scratch / "aws") as port:
                out["AWS XGBoost (gunicorn+gevent)"] = _cells(port, csv, args, scratch)
        else:
            print("SKIPPED AWS: give --aws-src PATH to sagemaker-xgboost-container's src/")
    return out


def _cells(port: int, request: Request, args: argparse.Namespace, scratch: Path) -> dict[int, Cell]:
    _check_answer(port, request)
    _wrk(port, request, 4, 1, scratch)  # warm-up: every worker and connection pool
    cells = {c: _wrk(port, request, c, args.seconds, scratch) for c in args.connections}
    for c, cell in cells.items():
        print(
            f"  {request.path} {c:3d} conns: p50 {cell.p50_ms:8.3f} ms  p99 {cell.p99_ms:8.3f}"
            f" ms  {cell.rps:9.0f} req/s",
            flush=True,
        )
    return cells


def _check_answer(port: int, request: Request) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", request.path, request.body, {"Content-Type": request.content_type})
    answer = conn.getresponse()
    data = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"{request.path} answered {answer.status}: {data[:300]!r}")
    print(f"port {port} {request.path}: {data[:80]!r}", flush=True)


def _wrk(port: int, request: Request, conns: int, seconds: int, scratch: Path) -> Cell:
    """A wrk run that fails loudly on any socket error as well as on any error answer."""
    cell = wrk.run(port, request, conns, seconds, scratch)
    if cell.socket_errors:
        raise RuntimeError(f"wrk saw {cell.socket_errors} socket errors on {request.path}")
    return cell


@contextlib.contextmanager
def _smserve(args: argparse.Namespace, model_dir: Path, log: Path) -> Iterator[int]:
    env = dict(item.split("=", 1) for item in args.env)
    if args.src:
        env["PYTHONPATH"] = args.src
    with proxied.proxied(model_dir, log, args.workers, env) as server:
        deadline = time.monotonic() + 300
        while len(READY.findall(server.output())) < args.workers:
            if time.monotonic() > deadline or server.process.poll() is not None:
                raise RuntimeError(f"no fast-predictor decision in the log:\n{server.output()}")
            time.sleep(0.5)
        for line in server.output().splitlines():
            if READY.search(line):
                print("  smserve:", line.split("]")[-1].strip()[:150], flush=True)
        yield server.port


def _report(model: str, results: dict[str, dict[int, Cell]], connections: list[int]) -> None:
    print(f"\n== {model} model: p50 / p99 ms and req/s per connection count ==")
    header = "".join(f" | {c:>2} conns p50   p99     req/s" for c in connections)
    print(f"{'server':32}{header}")
    for name, cells in results.items():
        row = "".join(
            f" | {cells[c].p50_ms:9.3f} {cells[c].p99_ms:7.2f} {cells[c].rps:9.0f}"
            for c in connections
        )
        print(f"{name:32}{row}")
    for against in (FLOOR, "MLServer 1.7.1 V2 REST", "AWS XGBoost (gunicorn+gevent)"):
        if against in results:
            _ratios(results, against, connections)


def _ratios(results: dict[str, dict[int, Cell]], against: str, connections: list[int]) -> None:
    base = results[against]
    for name in ("smserve /invocations CSV", "smserve V2 REST"):
        if name not in results:
            continue
        parts = []
        for c in connections:
            ours = results[name][c]
            if against == FLOOR:  # how far above the floor we sit
                parts.append(
                    f"{c}c: p50 {ours.p50_ms / base[c].p50_ms:6.1f}x the floor's, "
                    f"req/s {ours.rps / base[c].rps:5.3f}x"
                )
            else:
                parts.append(
                    f"{c}c: p50 {base[c].p50_ms / ours.p50_ms:6.2f}x lower, "
                    f"req/s {ours.rps / base[c].rps:5.2f}x"
                )
        print(f"{name} vs {against}: " + "; ".join(parts))
    print()


if __name__ == "__main__":
    main()
