"""smserve through nginx, smserve with gunicorn alone, and MLServer 1.7.1, side by side in one
run on the same model (XGBoost binary:logistic, 100 trees, depth 6, 50 features).

* 1 row, one keep-alive client (http.client), p50/p99: smserve CSV on /invocations, and the
  same V2 infer request (JSON tensor) to smserve's V2 door and to MLServer;
* 16 concurrent keep-alive clients for ``--seconds`` with wrk (apt-get install wrk): requests
  per second, p50 and p99;
* 10,000 x 50 CSV -> CSV through smserve against the in-process floor (np.loadtxt + predict +
  format).

MLServer runs from its own virtual environment (it pins other versions of our dependencies;
uvloop 0.22+ breaks its parallel workers: "There is no current event loop"):

    python3 -m venv .venv-mlserver
    .venv-mlserver/bin/pip install mlserver==1.7.1 mlserver-xgboost==1.7.1 "uvloop<0.22"
    .venv/bin/python bench/peers/peers.py [--mlserver PATH] [--workers 2] [--seconds 10]

smserve gets ``--workers`` gunicorn workers; MLServer runs twice, with ``parallel_workers`` 0
(inference in its main process, its fastest for one row) and ``--workers``; ratios are taken
against MLServer's better figure.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.serving import http_csv  # noqa: E402
from bench.shared import harness  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = {body}
wrk.headers["Content-Type"] = "{content_type}"
"""


def main() -> None:
    args = _arguments()
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
            with _mlserver(Path(args.mlserver), model_dir, Path(scratch) / name, workers) as port:
                results[name] = _measure_v2(port, args, Path(scratch), "/v2/models/m/infer")
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
    result.update(_wrk(port, "/invocations", one, "text/csv", args.seconds, scratch))
    big = harness.csv_body(harness.rows(10_000))
    assert client.post(big, "text/csv", "text/csv") == floor(big), "HTTP and floor differ"
    http_ms = harness.timings_ms(lambda: client.post(big, "text/csv", "text/csv"), 10, warmup=2)
    floor_ms = harness.timings_ms(lambda: floor(big), 10, warmup=2)
    result["10k_ms"] = harness.percentile(http_ms, 50)
    result["10k_ratio"] = result["10k_ms"] / harness.percentile(floor_ms, 50)
    return result


def _measure_v2(port: int, args: argparse.Namespace, scratch: Path, path: str) -> dict[str, float]:
    """1 row as a V2 JSON tensor on ``path``: p50/p99 and 16 clients."""
    body = _v2_body(1)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def infer() -> None:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"MLServer answered {response.status}: {data[:200]!r}")

    result = _latency(harness.timings_ms(infer, args.repeat))
    result.update(_wrk(port, path, body, "application/json", args.seconds, scratch))
    return result


def _v2_body(n: int) -> bytes:
    data = harness.rows(n).astype(float).round(6).tolist()
    tensor = {"name": "input-0", "shape": [n, harness.N_FEATURES], "datatype": "FP32", "data": data}
    return json.dumps({"inputs": [tensor]}).encode()


def _latency(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": harness.percentile(samples, 50), "p99_ms": harness.percentile(samples, 99)}


def _wrk(
    port: int, path: str, body: bytes, content_type: str, seconds: int, scratch: Path
) -> dict[str, float]:
    script = scratch / "post.lua"
    script.write_text(WRK_SCRIPT.format(body=json.dumps(body.decode()), content_type=content_type))
    command = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "-s", str(script)]
    output = subprocess.run(
        [*command, f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True
    ).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if errors:
        raise RuntimeError(f"wrk saw error answers:\n{output}")
    socket = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    return {
        "socket_errors": float(sum(int(n) for n in socket.groups())) if socket else 0.0,
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),  # type: ignore[union-attr]
        "c16_p50_ms": _wrk_ms(output, "50%"),
        "c16_p99_ms": _wrk_ms(output, "99%"),
    }


def _wrk_ms(output: str, label: str) -> float:
    value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)", output).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


@contextlib.contextmanager
def _mlserver(mlserver: Path, model_dir: Path, scratch: Path, workers: int) -> Iterator[int]:
    repo = scratch / "mlserver"
    (repo / "m").mkdir(parents=True)
    shutil.copy(model_dir / "xgboost-model", repo / "m" / "model.json")
    settings = {"implementation": "mlserver_xgboost.XGBoostModel", "name": "m"}
    (repo / "m" / "model-settings.json").write_text(json.dumps(settings))
    port = harness.free_port()
    server = {
        "http_port": port,
        "grpc_port": harness.free_port(),
        "metrics_port": harness.free_port(),
    }
    (repo / "settings.json").write_text(json.dumps({**server, "parallel_workers": workers}))
    env = {**os.environ, "MLSERVER_LOGGING_LEVEL": "WARNING"}
    process = subprocess.Popen(
        [str(mlserver), "start", str(repo)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        harness.wait_ready(port, process, "/v2/models/m/ready", 120)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


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
