"""This tree against another, side by side in one run, under wrk through each server's own
nginx: the requests issue 33 names (the 1-row and 10,000-row ``/invocations``, V2 infer, V2
model metadata, TF Serving's model status, and the multi-model ``GET /models``), plus the
nginx fixed-body floor, for ``--runs`` rounds.

Both trees' servers (and the floor) run at once, started once and idle while another is
measured; each round measures every request on each server back to back, the servers' order
alternating round by round (A B, B A, ...), so a drift of the machine reaches both alike. Each
cell is one ``--seconds`` wrk run at ``--connections`` keep-alive connections; the report
gives every round's p50, the median of the rounds, their spread (max / min), and B / A of the
medians. ``--pin`` runs each server's workers and nginx on CPU 1 and wrk on CPU 0
(``taskset``), to tell the scheduler's share of the spread from the server's; ``--only TEXT``
keeps the requests whose name holds TEXT. Beside each p50 the run's CPU time is given per
process of the server (which worker answered, what nginx took) and the machine's steal time
(``/proc/stat``: CPU the hypervisor gave to other guests), to tell where a spread comes from.

    git archive 40229ed src | tar -x -C /tmp/before   # (+ its compiled _fast, see below)
    flock /tmp/smserve-bench.lock .venv/bin/python bench/serving/request_path_ab.py \\
        --against /tmp/before/src [--runs 5] [--seconds 5] [--pin]

The tree before needs its compiled fast predictor beside its sources (copy
``src/smserve/algorithms/xgboost/_fast*.so`` into the same folder of the archive).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.peers import wrk_servers  # noqa: E402
from bench.serving import usage  # noqa: E402
from bench.shared import harness, proxied, wrk  # noqa: E402
from bench.shared.wrk import Request  # noqa: E402

READY = "fast predictor serves"
MODELS = ("alpha", "beta", "gamma")


def main() -> None:
    args = _arguments()
    wrk.ensure_installed()
    with tempfile.TemporaryDirectory(prefix="request-path-ab-") as scratch_dir:
        scratch = Path(scratch_dir)
        single, multi = _models(scratch)
        with contextlib.ExitStack() as stack:
            servers = _servers(stack, args, single, multi, scratch)
            rounds = _measure(servers, args, scratch)
    _report(rounds)
    print(json.dumps(rounds))


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other tree's src directory (A)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5, help="per cell")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pin", action="store_true", help="servers on CPU 1, wrk on CPU 0")
    parser.add_argument("--only", default="", help="only the requests whose name holds this")
    return parser.parse_args()


def _models(scratch: Path) -> tuple[Path, Path]:
    single, multi = scratch / "model", scratch / "models"
    harness.build_xgboost(single)
    for name in MODELS:
        harness.build_xgboost(multi / name)
    return single, multi


def requests() -> dict[str, Request]:
    one, many = harness.rows(1), harness.rows(10_000)
    return {
        "invocations 1 row": Request("/invocations", harness.csv_body(one), "text/csv"),
        "invocations 10,000 rows": Request("/invocations", harness.csv_body(many), "text/csv"),
        "V2 infer 1 row": Request(
            "/v2/models/model/infer", harness.v2_body(one), "application/json"
        ),
        "V2 model metadata": Request("/v2/models/model", b"", "", "GET"),
        "TF Serving model status": Request("/v1/models/model", b"", "", "GET"),
    }


LISTING = Request("/models", b"", "", "GET")
ROOTS: dict[int, int] = {}  # each server's port -> the PID of its process tree's root


def _servers(
    stack: contextlib.ExitStack,
    args: argparse.Namespace,
    single: Path,
    multi: Path,
    scratch: Path,
) -> dict[str, dict[str, int]]:
    """Per tree, the port of its single-model and multi-model servers; the floor's."""
    prefix = ["taskset", "-c", "1"] if args.pin else []
    floor = stack.enter_context(wrk_servers.floor_server(scratch / "floor"))
    ROOTS[floor] = os.getpid()  # the floor's nginx is this process's child
    trees = {"A (against)": {"PYTHONPATH": args.against}, "B (this tree)": {}}
    ports: dict[str, dict[str, int]] = {"floor": {"floor": floor}}
    for name, env in trees.items():
        tag = name[0]
        one = stack.enter_context(_served(single, scratch / f"{tag}.log", args, env, prefix))
        mme_env = {**env, "SAGEMAKER_MULTI_MODEL": "true", "SMSERVE_MODELS_DIR": str(multi)}
        many = stack.enter_context(
            _served(multi, scratch / f"{tag}-mme.log", args, mme_env, prefix)
        )
        harness.register_models(many, MODELS)
        ports[name] = {"single": one, "multi": many}
    return ports


@contextlib.contextmanager
def _served(
    model_dir: Path, log: Path, args: argparse.Namespace, env: dict[str, str], prefix: list[str]
) -> Iterator[int]:
    with proxied.proxied(model_dir, log, args.workers, env) as server:
        if prefix:
            _pin(server.process.pid, prefix)
        if "SAGEMAKER_MULTI_MODEL" not in env:
            _wait_for_fast_predictor(server, args.workers)
        ROOTS[server.port] = server.process.pid
        yield server.port


def _pin(pid: int, prefix: list[str]) -> None:
    """Move the server's whole process tree (supervisor, nginx, gunicorn and its workers)."""
    for member in usage.tree(pid):
        subprocess.run([*prefix[:2], "-p", prefix[2], str(member)], check=True, capture_output=True)


def _wait_for_fast_predictor(server: proxied.Proxied, workers: int) -> None:
    deadline = time.monotonic() + 300
    while server.output().count(READY) < workers:
        if time.monotonic() > deadline or server.process.poll() is not None:
            raise RuntimeError(f"the fast predictor never served:\n{server.output()}")
        time.sleep(0.5)


def _measure(
    servers: dict[str, dict[str, int]], args: argparse.Namespace, scratch: Path
) -> dict[str, dict[str, list[float]]]:
    """p50 in ms per request per server, one entry per round."""
    cells = {name: ("single", request) for name, request in requests().items()}
    cells["multi-model GET /models"] = ("multi", LISTING)
    cells = {name: cell for name, cell in cells.items() if args.only in name}
    trees = [name for name in servers if name != "floor"]
    rounds: dict[str, dict[str, list[float]]] = {}
    floor = Request("/invocations", harness.csv_body(harness.rows(1)), "text/csv")
    for round_index in range(args.runs):
        order = trees if round_index % 2 == 0 else trees[::-1]
        _one(rounds, "nginx floor", "floor", servers["floor"]["floor"], floor, args, scratch)
        for cell, (role, request) in cells.items():
            for tree in order:
                _one(rounds, cell, tree, servers[tree][role], request, args, scratch)
        print(f"round {round_index + 1} of {args.runs} done", flush=True)
    return rounds


def _one(
    rounds: dict[str, dict[str, list[float]]],
    cell: str,
    tree: str,
    port: int,
    request: Request,
    args: argparse.Namespace,
    scratch: Path,
) -> None:
    _check(port, request)
    prefix = ["taskset", "-c", "0"] if args.pin else []
    before = usage.sample(ROOTS[port])
    result = wrk.run(port, request, args.connections, args.seconds, scratch, prefix)
    if result.socket_errors:
        raise RuntimeError(f"wrk saw {result.socket_errors} socket errors on {request.path}")
    rounds.setdefault(cell, {}).setdefault(tree, []).append(result.p50_ms)
    spent = usage.sample(ROOTS[port]).minus(before)
    print(f"  {cell:26s} {tree:14s} p50 {result.p50_ms:8.3f} ms  {spent}", flush=True)


def _check(port: int, request: Request) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": request.content_type} if request.method == "POST" else {}
    body = request.body if request.method == "POST" else None
    connection.request(request.method, request.path, body, headers)
    answer = connection.getresponse()
    data = answer.read()
    connection.close()
    if answer.status != 200:
        raise RuntimeError(f"{request.method} {request.path}: {answer.status} {data[:300]!r}")


def _report(rounds: dict[str, dict[str, list[float]]]) -> None:
    print("\n== p50 ms per round; median; spread (max/min); B/A of the medians ==")
    for cell, trees in rounds.items():
        medians = {tree: statistics.median(values) for tree, values in trees.items()}
        for tree, values in trees.items():
            spread = max(values) / min(values)
            listed = " ".join(f"{v:.3f}" for v in values)
            print(f"{cell:26s} {tree:14s} [{listed}] median {medians[tree]:.3f} x{spread:.2f}")
        if len(medians) == 2:
            a, b = medians.values()
            print(f"{cell:26s} B/A {b / a:.2f}")


if __name__ == "__main__":
    main()
