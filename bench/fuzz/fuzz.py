"""Fuzz the real server through nginx: mutated and random requests from concurrent keep-alive
clients over raw sockets, against three servers (client i uses server i % 3): XGBoost, k-means,
and a multi-model endpoint serving both (SAGEMAKER_MULTI_MODEL, the /models routes).

What is sent is described in fuzz_bodies.py, fuzz_requests.py, fuzz_mutations.py,
fuzz_framing.py and fuzz_mme.py. What must hold, counted and printed, with examples of any
breach (the exit status is 1 then):

* no answer >= 500;
* no connection dropped or reset after an answer that kept it alive (keep-alive desync), and
  none closed without an answer where one was due; no answer cut short or late;
* every answer >= 400 is ``Content-Type: application/json`` with a JSON object holding
  ``error`` and ``message`` (under /v1/ and /v2, TF Serving's and V2's ``{"error"}`` alone is
  their envelope);
* no gunicorn worker restarted: the same worker pids before and after, and no "Booting
  worker" in the server log beyond the initial ones.

    .venv/bin/python bench/fuzz/fuzz.py [--count 100000] [--seed 0] [--seconds 1800] [--clients 8]
                                   [--workers 2] [--payload-mb 1] [--frontend nginx]

The payload limit is lowered to 1 MiB by default so that bodies at the limit stay cheap; the
server runs with its other defaults. ``--frontend gunicorn`` fuzzes gunicorn alone (no nginx).
"""

from __future__ import annotations

import argparse
import random
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.fuzz import fuzz_bodies  # noqa: E402
from bench.fuzz import fuzz_requests as kinds  # noqa: E402
from bench.fuzz.fuzz_framing import framing  # noqa: E402
from bench.fuzz.fuzz_mme import SERVED, mme  # noqa: E402
from bench.fuzz.fuzz_session import ANSWER_TIMEOUT_S, EXAMPLES, Session, Tally  # noqa: E402
from bench.shared import harness, proxied  # noqa: E402

KINDS = (
    (kinds.invocation, 50.0),
    (kinds.tf_serving, 12.0),
    (kinds.v2, 10.0),
    (kinds.route, 12.0),
    (kinds.header_abuse, 7.0),
    (kinds.garbage, 3.0),
    (framing, 5.0),
    (kinds.pipelined, 5.0),
    (kinds.near_limit, 0.4),
)
MME_KINDS = (
    (mme, 70.0),
    (kinds.route, 10.0),
    (kinds.header_abuse, 5.0),
    (framing, 5.0),
    (kinds.pipelined, 5.0),
    (kinds.garbage, 3.0),
    (kinds.tf_serving, 2.0),
    (kinds.v2, 4.0),
)


def run_client(index: int, port: int, quota: int, args: argparse.Namespace, out: Tally) -> None:
    r = random.Random(f"{args.seed}/{index}")
    bodies = fuzz_bodies.Bodies(args.payload_mb * 1024 * 1024, seed=args.seed + index)
    generators, weights = zip(*(MME_KINDS if index % 3 == 2 else KINDS), strict=True)
    session = Session(port, out)
    deadline = time.monotonic() + args.seconds
    try:
        for _ in range(quota):
            if time.monotonic() > deadline:
                break
            session.send(r.choices(generators, weights)[0](r, bodies))
    except OSError as exc:  # could not even connect: the server is gone
        out.fail("client errors", repr(exc))
    finally:
        session.close()


def fuzz(args: argparse.Namespace, ports: list[int]) -> tuple[Tally, float]:
    tallies = [Tally() for _ in range(args.clients)]
    quotas = [
        args.count // args.clients + (i < args.count % args.clients) for i in range(args.clients)
    ]
    threads = [
        threading.Thread(
            target=run_client, args=(i, ports[i % len(ports)], quotas[i], args, tallies[i])
        )
        for i in range(args.clients)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = Tally()
    for tally in tallies:
        total.merge(tally)
    return total, time.monotonic() - started


@dataclass
class Watched:
    """A server's gunicorn workers and boot count when the fuzz began."""

    name: str
    server: proxied.Proxied
    pids: list[int] = field(default_factory=list)
    boots: int = 0

    def mark(self) -> None:
        self.pids, self.boots = self.server.worker_pids(), self.server.boots()

    def restarts(self) -> tuple[int, str]:
        pids, boots = self.server.worker_pids(), self.server.boots()
        gone = len(set(self.pids) - set(pids))
        count = max(gone, boots - self.boots)
        return (
            count,
            f"{self.name}: worker pids {self.pids} -> {pids}, boots {self.boots} -> {boots}",
        )


def report(args: argparse.Namespace, tally: Tally, seconds: float, watched: list[Watched]) -> int:
    restarts = [w.restarts() for w in watched]
    for count, line in restarts:
        if count:
            tally.fail("worker restarts", line)
    rate = tally.requests / seconds if seconds else 0.0
    print(
        f"fuzz: {tally.requests} requests in {seconds:.1f} s ({rate:.0f}/s), "
        f"{args.clients} clients, "
        f"seed {args.seed}, payload limit {args.payload_mb} MiB, {args.workers} workers per server"
    )
    print("  by status:", ", ".join(f"{k}: {v}" for k, v in sorted(tally.by_status.items())))
    print("  by kind:", ", ".join(f"{k}: {v}" for k, v in sorted(tally.by_kind.items())))
    print(
        f"  connections: {tally.connections}; closed without an answer where allowed "
        f"(body cut short): {tally.dropped_as_allowed}"
    )
    for _, line in restarts:
        print(f"  {line}")
    for what in INVARIANTS:
        print(f"  {what}: {tally.failures[what]}")
    if tally.requests < args.count:
        print(f"  stopped at the --seconds cap ({args.seconds} s) before --count {args.count}")
    for what, examples in sorted(tally.examples.items()):
        print(f"FAILED {what}, for example:")
        for example in examples[:EXAMPLES]:
            print(f"    {example[:1500]}")
    return 1 if sum(tally.failures.values()) else 0


INVARIANTS = (
    "answers >= 500",
    "connections dropped after a keep-alive answer",
    "connections closed without an answer",
    "answers cut short",
    f"no answer within {ANSWER_TIMEOUT_S:.0f} s",
    "error answers not the JSON envelope",
    "worker restarts",
)


def main() -> int:
    args = _arguments()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        harness.build_xgboost(root / "xgboost")
        harness.build_kmeans(root / "kmeans")
        env = {
            "SAGEMAKER_MAX_PAYLOAD_IN_MB": str(args.payload_mb),
            "SMSERVE_FRONTEND": args.frontend,
        }
        harness.build_xgboost(root / "models" / "xgboost")
        harness.build_kmeans(root / "models" / "kmeans")
        _links_outside(root / "models", root)
        multi = {**env, "SAGEMAKER_MULTI_MODEL": "true", "SMSERVE_MODELS_DIR": str(root / "models")}
        with (
            proxied.starting(root / "xgboost", root / "xgboost.log", args.workers, env) as xgb,
            proxied.starting(root / "kmeans", root / "kmeans.log", args.workers, env) as km,
            proxied.starting(root / "models", root / "mme.log", args.workers, multi) as many,
        ):
            watched = [Watched("xgboost", xgb), Watched("kmeans", km), Watched("multi-model", many)]
            for w in watched:
                proxied.wait_ready(w.server)
                w.mark()
            harness.register_models(many.port, SERVED)
            tally, seconds = fuzz(args, [xgb.port, km.port, many.port])
            time.sleep(0.5)  # let a worker that died at the very end be noticed
            return report(args, tally, seconds, watched)


def _links_outside(models: Path, root: Path) -> None:
    """A folder link and a file link that lead outside the models directory (fuzz_mme)."""
    (models / "escape").symlink_to(root / "xgboost")
    (models / "linked-out").mkdir()
    (models / "linked-out" / "model_algo-1").symlink_to(root / "kmeans" / "model_algo-1")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=1800.0, help="stop sending after this")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per server")
    parser.add_argument("--payload-mb", type=int, default=1)
    parser.add_argument("--frontend", choices=("nginx", "gunicorn"), default="nginx")
    return parser.parse_args()


if __name__ == "__main__":
    socket.setdefaulttimeout(ANSWER_TIMEOUT_S)
    sys.exit(main())
