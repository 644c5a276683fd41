"""smserve through nginx, smserve with gunicorn alone, and MLServer 1.7.1, side by side in one
run on the same model (XGBoost binary:logistic, 100 trees, depth 6, 50 features).

* 1 row, one keep-alive client (http.client), p50/p99: smserve CSV on /invocations, and the
  same V2 infer request (JSON tensor) to smserve's V2 door and to MLServer;
* 16 concurrent keep-alive clients for ``--seconds`` with wrk (apt-get install wrk): requests
  per second, p50 and p99;
* 10,000 x 50 CSV -> CSV through smserve against the in-process floor (np.loadtxt + predict +
  format).

MLServer runs from its own virtual environment (see ``bench/shared/mlserver.py``):

    .venv/bin/python bench/peers/peers.py [--mlserver PATH] [--workers 2] [--seconds 10]

smserve gets ``--workers`` gunicorn workers; MLServer runs twice, with ``parallel_workers`` 0
(inference in its main process, its fastest for one row) and ``--workers``; ratios are taken
against MLServer's better figure.
"""

from __future__ import annotations

import argparse
import http.client
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.serving import http_csv  # noqa: E402
from bench.shared import harness, mlserver, wrk  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    args = _arguments()
    wrk.ensure_installed()
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(scratch) / "model"
        floor = http_csv.xgboost_floor(model_dir)
        results = {}
        for name, env in (("smserve+nginx", "nginx"), ("smserve gunicorn-only", "gunicorn")):
            with harness.server(model_dir, args.workers, SMSERVE_FRONTEND=env) as port:
                results[name] = _measure_smserve(port, args, floor, Path(scratch))
                print(name, results[name], flush=True)
                if env == "nginx":  # the same V2 request MLServer gets, through our V2 door
                    v2 = _measure_v2(port, args, Path(scratch), "/v2/models/model/infer")
                    results["smserve+nginx V2"] = v2
                    print("smserve+nginx V2", v2, flush=True)
        for workers in (0, args.workers) if args.mlserver else ():
            name = f"MLServer 1.7.1 pw={workers}"
            executable, run_dir = Path(args.mlserver), Path(scratch) / name
            with mlserver.mlserver(executable, model_dir, run_dir, workers) as ports:
                path = f"/v2/models/{mlserver.MODEL}/infer"
                results[name] = _measure_v2(ports.http, args, Path(scratch), path)
            print(name, results[name], flush=True)
    _report(results)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_mlserver = ROOT / ".venv-mlserver" / "bin" / "mlserver"
    parser.add_argument(
        "--mlserver", default=str(default_mlserver) if default_mlserver.exists() else ""
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2000)
    return parser.parse_args()


def _measure_smserve(
    port: int, args: argparse.Namespace, floor: Callable[[bytes], bytes], scratch: Path
) -> dict[str, float]:
    client = harness.Client(port)
    one = harness.csv_body(harness.rows(1))
    samples = harness.timings_ms(lambda: client.post(one, "text/csv", "text/csv"), args.repeat)
    result = _latency(samples)
    result.update(_wrk(port, wrk.Request("/invocations", one, "text/csv"), args.seconds, scratch))
    big = harness.csv_body(harness.rows(10_000))
    assert client.post(big, "text/csv", "text/csv") == floor(big), "HTTP and floor differ"
    http_ms = harness.timings_ms(lambda: client.post(big, "text/csv", "text/csv"), 10, warmup=2)
    floor_ms = harness.timings_ms(lambda: floor(big), 10, warmup=2)
    result["10k_ms"] = harness.percentile(http_ms, 50)
    result["10k_ratio"] = result["10k_ms"] / harness.percentile(floor_ms, 50)
    return result


def _measure_v2(port: int, args: argparse.Namespace, scratch: Path, path: str) -> dict[str, float]:
    """1 row as a V2 JSON tensor on ``path``: p50/p99 and 16 clients."""
    body = harness.v2_body(harness.rows(1))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def infer() -> None:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"MLServer answered {response.status}: {data[:200]!r}")

    result = _latency(harness.timings_ms(infer, args.repeat))
    result.update(_wrk(port, wrk.Request(path, body, "application/json"), args.seconds, scratch))
    return result


def _latency(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": harness.percentile(samples, 50), "p99_ms": harness.percentile(samples, 99)}


def _wrk(port: int, request: wrk.Request, seconds: int, scratch: Path) -> dict[str, float]:
    """16 connections under wrk."""
    cell = wrk.run(port, request, 16, seconds, scratch)
    return {
        "socket_errors": float(cell.socket_errors),
        "rps": cell.rps,
        "c16_p50_ms": cell.p50_ms,
        "c16_p99_ms": cell.p99_ms,
    }


def _report(results: dict[str, dict[str, float]]) -> None:
    columns = ("1-row p50", "p99", "16c rps", "16c p50", "16c p99", "10k ms", "10k/floor")
    print(f"{'server':24} " + " ".join(f"{c:>9}" for c in columns))
    for name, r in results.items():
        tail = (
            f"{r['10k_ms']:8.1f} {r['10k_ratio']:8.2f}x" if "10k_ms" in r else f"{'-':>8} {'-':>9}"
        )
        print(
            f"{name:24} {r['p50_ms']:8.3f}ms {r['p99_ms']:6.2f}ms {r['rps']:9.0f} "
            f"{r['c16_p50_ms']:6.2f}ms {r['c16_p99_ms']:6.2f}ms {tail}"
            + (
                f"  ({r['socket_errors']:.0f} wrk socket errors/timeouts)"
                if r["socket_errors"]
                else ""
            )
        )
    peers = [name for name in results if name.startswith("MLServer")]
    if not peers:
        return
    # Against MLServer's best configuration for each figure.
    best_p50 = min(results[name]["p50_ms"] for name in peers)
    best_rps = max(results[name]["rps"] for name in peers)
    for name in ("smserve+nginx", "smserve gunicorn-only", "smserve+nginx V2"):
        ours = results[name]
        print(
            f"{name}: 1-row p50 {best_p50 / ours['p50_ms']:.2f}x lower than MLServer's best, "
            f"16-client throughput {ours['rps'] / best_rps:.2f}x MLServer's best"
        )
    proxy_cost = results["smserve+nginx"]["p50_ms"] - results["smserve gunicorn-only"]["p50_ms"]
    print(f"the proxy's cost at 1-row p50: {proxy_cost * 1000:+.0f} us")


if __name__ == "__main__":
    main()
