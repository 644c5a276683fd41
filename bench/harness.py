"""Shared benchmark plumbing: tiny-but-realistic models, a real `smserve serve` subprocess,
a keep-alive HTTP client and timing statistics. Nothing here is imported by the package."""

from __future__ import annotations

import contextlib
import http.client
import io
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xgboost as xgb

from smserve.algorithms.base import Algorithm
from smserve.algorithms.ndarray import write_ndarray_file

N_FEATURES = 50
SMSERVE = str(Path(sys.executable).with_name("smserve"))


def build_xgboost(model_dir: Path, n_trees: int = 100, depth: int = 6) -> xgb.Booster:
    """binary:logistic, 100 trees of depth 6 on 50 features (the reference's upstream setup)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000, N_FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": depth, "eta": 0.1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=n_trees)
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "xgboost-model").write_bytes(booster.save_raw("json"))  # SageMaker's name
    return booster


def build_kmeans(model_dir: Path, k: int = 10) -> np.ndarray:
    rng = np.random.default_rng(1)
    centroids = rng.normal(size=(k, N_FEATURES)).astype(np.float32)
    model_dir.mkdir(parents=True, exist_ok=True)
    write_ndarray_file(model_dir / "model_algo-1", centroids)
    return centroids


def rows(n: int, seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, N_FEATURES)).astype(np.float32)


def csv_body(matrix: np.ndarray) -> bytes:
    """Six significant digits: 10,000 x 50 rows fit the default 6 MiB payload limit."""
    buffer = io.StringIO()
    np.savetxt(buffer, matrix, fmt="%.6g", delimiter=",")
    return buffer.getvalue().encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server(model_dir: Path, workers: int = 1, **env: str) -> Iterator[int]:
    """Run `smserve serve` on a free port until the block ends; yields the port."""
    with served(model_dir, workers, **env) as (port, _):
        yield port


@contextlib.contextmanager
def served(
    model_dir: Path, workers: int = 1, **env: str
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """``server``, yielding the port and the `smserve serve` process."""
    port = free_port()
    environ = {
        **os.environ,
        "SM_MODEL_DIR": str(model_dir),
        "SAGEMAKER_BIND_TO_PORT": str(port),
        "SAGEMAKER_MODEL_SERVER_WORKERS": str(workers),
        **env,
    }
    process = subprocess.Popen([SMSERVE, "serve"], env=environ, stdout=subprocess.DEVNULL)
    try:
        _wait_ready(port, process)
        yield port, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    wait_ready(port, process, "/ping", 60)


def wait_ready(port: int, process: subprocess.Popen[bytes], path: str, timeout_s: float) -> None:
    """Poll GET ``path`` until it answers 200; raises if ``process`` exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        with contextlib.suppress(OSError):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{process.args!r} was not ready within {timeout_s} s")


@dataclass
class Client:
    """One keep-alive connection; every call checks the status so a broken run cannot pass."""

    port: int

    def __post_init__(self) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def post(self, body: bytes, content_type: str, accept: str) -> bytes:
        headers = {"Content-Type": content_type, "Accept": accept}
        self.conn.request("POST", "/invocations", body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
        return data


def timings_ms(call: Callable[[], object], repeat: int, warmup: int = 20) -> list[float]:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def percentile(samples: list[float], pct: float) -> float:
    return float(np.percentile(np.asarray(samples), pct))


def summary(samples: list[float]) -> str:
    return (
        f"p50 {percentile(samples, 50):7.3f} ms  p99 {percentile(samples, 99):7.3f} ms  "
        f"mean {statistics.fmean(samples):7.3f} ms"
    )


def cpu_and_gpu(model_dir: Path) -> tuple[Algorithm, Algorithm] | None:
    """The model in ``model_dir`` loaded for the CPU and for CUDA; None (with a SKIPPED line)
    when XGBoost sees no GPU."""
    from smserve.algorithms.loading import load_algorithm
    from smserve.config import Settings
    from smserve.errors import ModelLoadError

    base = Settings(model_dir=model_dir, workers=1)
    cpu = load_algorithm(base.replace(xgboost_device="cpu"))
    try:
        gpu = load_algorithm(base.replace(xgboost_device="cuda"))
    except ModelLoadError as exc:
        print(f"SKIPPED: no GPU visible to XGBoost ({exc})")
        return None
    return cpu, gpu
