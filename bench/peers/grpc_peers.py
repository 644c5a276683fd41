"""The Open Inference Protocol over gRPC: smserve's gRPC door against MLServer 1.7.1's gRPC,
on the same model (XGBoost binary:logistic, 100 trees, depth 6, 50 features), in one run.

* 1 row, one client on one channel, ``--repeat`` calls: p50 and p99 of ModelInfer with the
  row as raw_input_contents (what tritonclient sends); and, on the same smserve, the same row
  as a V2 REST JSON tensor (http.client, keep-alive, through nginx), for the gRPC/REST ratio;
* 16 concurrent clients for ``--seconds``: 16 processes (forked before any gRPC exists in
  this one), each with its own connection, each answer checked (status OK); calls per
  second, p50 and p99.

smserve runs with ``--workers`` gunicorn workers (each serving gRPC on the shared port), and
again with one worker (what a single separate gRPC process would give: the per-worker design's
measurement). MLServer runs from its own virtual environment (``bench/shared/mlserver.py``)
with ``parallel_workers`` 0 and ``--workers``; ratios are taken against its better figure.
Before timing, both servers' answers to the row are checked to be the same probability.

    flock /tmp/smserve-bench.lock .venv/bin/python bench/peers/grpc_peers.py \\
        --mlserver /work/venvs/mlserver/bin/mlserver [--workers 2] [--seconds 10]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness, mlserver  # noqa: E402
from smserve.v2grpc.protocol import ModelInferRequest, ModelInferResponse  # noqa: E402

INFER = "/inference.GRPCInferenceService/ModelInfer"
TARGETS = {"p50": 2.0, "rps": 2.5, "grpc_over_rest": 1.2}
_START: Any = None  # the clients' barrier: each starts timing once every one is warm


def main() -> None:
    args = _arguments()
    # The clients' processes are forked now, before this process has any gRPC channel (after
    # one, fork is unsafe); spawned ones would each import this module's dependencies.
    global _START  # inherited by the forked clients
    fork = multiprocessing.get_context("fork")
    _START = fork.Barrier(args.clients, timeout=300)
    with fork.Pool(args.clients) as pool:
        _run(args, pool)


def _run(args: argparse.Namespace, pool: Any) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(scratch) / "model"
        harness.build_xgboost(model_dir)
        results: dict[str, dict[str, float]] = {}
        expected = None
        for workers in (args.workers, 1):
            name = f"smserve gRPC w={workers}"
            with _smserve(model_dir, workers) as (http_port, grpc_port):
                expected = _answer(grpc_port, "model")
                results[name] = _measure(grpc_port, "model", args, pool)
                if workers == args.workers:
                    results["smserve REST V2"] = _rest_v2(http_port, args.repeat)
            print(name, results[name], flush=True)
        for workers in (0, args.workers):
            name = f"MLServer 1.7.1 pw={workers}"
            executable, run_dir = Path(args.mlserver), Path(scratch) / name
            with mlserver.mlserver(executable, model_dir, run_dir, workers) as ports:
                answer = _answer(ports.grpc, mlserver.MODEL)
                assert np.allclose(answer, expected, rtol=1e-6), (answer, expected)
                results[name] = _measure(ports.grpc, mlserver.MODEL, args, pool)
            print(name, results[name], flush=True)
    _report(results, f"smserve gRPC w={args.workers}", args.clients)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlserver", default="/work/venvs/mlserver/bin/mlserver")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    return parser.parse_args()


def _request(model: str) -> bytes:
    request = ModelInferRequest(model_name=model)
    row = harness.rows(1)
    request.inputs.add(name="input-0", datatype="FP32", shape=row.shape)
    request.raw_input_contents.append(row.astype("<f4").tobytes())
    return bytes(request.SerializeToString())


def _channel(port: int) -> grpc.Channel:
    """A channel with a connection of its own (a local subchannel pool)."""
    options = [("grpc.use_local_subchannel_pool", 1)]
    return grpc.insecure_channel(f"127.0.0.1:{port}", options=options)


def _caller(channel: grpc.Channel, model: str) -> Callable[[], bytes]:
    """ModelInfer of the one row: raw bytes in and out."""
    infer = channel.unary_unary(INFER)
    body = _request(model)
    return lambda: bytes(infer(body, timeout=30))


def _answer(port: int, model: str) -> np.ndarray:
    with _channel(port) as channel:
        response = ModelInferResponse.FromString(_caller(channel, model)())
    return np.frombuffer(response.raw_output_contents[0], "<f4")


def _measure(port: int, model: str, args: argparse.Namespace, pool: Any) -> dict[str, float]:
    with _channel(port) as channel:
        samples = harness.timings_ms(_caller(channel, model), args.repeat, warmup=200)
    result = {"p50_ms": harness.percentile(samples, 50), "p99_ms": harness.percentile(samples, 99)}
    result.update(_concurrent(port, model, pool, args.clients, args.seconds))
    return result


def _concurrent(port: int, model: str, pool: Any, clients: int, seconds: int) -> dict[str, float]:
    """``clients`` callers at once, each on a connection of its own, timed together for
    ``seconds`` once every one has connected and warmed up."""
    parts = pool.starmap(_client, [(port, model, seconds)] * clients, chunksize=1)
    samples = [ms for part in parts for ms in part]
    return {
        "rps": len(samples) / seconds,
        "c_p50_ms": harness.percentile(samples, 50),
        "c_p99_ms": harness.percentile(samples, 99),
    }


def _client(port: int, model: str, seconds: int) -> list[float]:
    """Each call's time in the window (a failed call raises, and the run fails)."""
    with _channel(port) as channel:
        call = _caller(channel, model)
        for _ in range(50):
            call()
        _START.wait()
        samples: list[float] = []
        end = time.perf_counter() + seconds
        while (began := time.perf_counter()) < end:
            call()
            samples.append((time.perf_counter() - began) * 1000)
    return samples


def _rest_v2(port: int, repeat: int) -> dict[str, float]:
    body = harness.v2_body(harness.rows(1))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def infer() -> None:
        headers = {"Content-Type": "application/json"}
        conn.request("POST", "/v2/models/model/infer", body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"REST V2 answered {response.status}: {data[:200]!r}")

    samples = harness.timings_ms(infer, repeat, warmup=200)
    return {"p50_ms": harness.percentile(samples, 50), "p99_ms": harness.percentile(samples, 99)}


@contextlib.contextmanager
def _smserve(model_dir: Path, workers: int) -> Iterator[tuple[int, int]]:
    grpc_port = harness.free_port()
    env = {"SMSERVE_GRPC_PORT": str(grpc_port), "SMSERVE_BIND_HOST": "127.0.0.1"}
    with harness.server(model_dir, workers, SMSERVE_FRONTEND="nginx", **env) as http_port:
        _answer(grpc_port, "model")  # gRPC answers (/ping did: every worker has loaded)
        yield http_port, grpc_port


def _report(results: dict[str, dict[str, float]], ours: str, clients: int) -> None:
    print(f"{'server':26} {'1-row p50':>10} {'p99':>8} {'Nc rps':>8} {'Nc p50':>8} {'Nc p99':>8}")
    for name, r in results.items():
        tail = (
            f"{r['rps']:8.0f} {r['c_p50_ms']:7.2f}ms {r['c_p99_ms']:7.2f}ms" if "rps" in r else ""
        )
        print(f"{name:26} {r['p50_ms']:8.3f}ms {r['p99_ms']:6.2f}ms {tail}")
    peers = [name for name in results if name.startswith("MLServer")]
    best_p50 = min(results[name]["p50_ms"] for name in peers)
    best_rps = max(results[name]["rps"] for name in peers)
    mine = results[ours]
    figures = {
        "p50": best_p50 / mine["p50_ms"],
        "rps": mine["rps"] / best_rps,
        "grpc_over_rest": mine["p50_ms"] / results["smserve REST V2"]["p50_ms"],
    }
    print(
        f"{ours}: 1-row p50 {figures['p50']:.2f}x lower than MLServer's best gRPC (target >= "
        f"{TARGETS['p50']}x); {clients}-client throughput {figures['rps']:.2f}x "
        f"MLServer's best (target >= {TARGETS['rps']}x); gRPC p50 / REST V2 p50 "
        f"{figures['grpc_over_rest']:.2f} (target <= {TARGETS['grpc_over_rest']})"
    )


if __name__ == "__main__":
    main()
