"""Shared benchmark plumbing: tiny-but-realistic models, a real `smserve serve` subprocess,
a keep-alive HTTP client and timing statistics. Nothing here is imported by the package."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def build_big(model_dir: Path, n_trees: int = 1000, depth: int = 8, n_features: int = 100) -> None:
    """binary:logistic, ``n_trees`` full trees of ``depth`` (511 nodes each for depth 8) on
    ``n_features`` features. The trees are generated, not trained: training 1,000 trees of
    depth 8 takes over half an hour on this shared machine, and rarely fills them (confident
    rows stop splitting), while prediction costs what the trees' shape costs, whatever fitted
    their values. Thresholds are drawn like the features (standard normal), so every path is
    taken; XGBoost loads and predicts the file as any other."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, n_features)).astype(np.float32)
    template = xgb.train(
        {"objective": "binary:logistic", "max_depth": 1, "nthread": 1},
        xgb.DMatrix(x, label=(x[:, 0] > 0).astype(np.float32)),
        num_boost_round=1,
    )
    document = json.loads(template.save_raw("json"))
    model = document["learner"]["gradient_booster"]["model"]
    model["trees"] = [_full_tree(i, depth, n_features, rng) for i in range(n_trees)]
    model["tree_info"] = [0] * n_trees
    model["iteration_indptr"] = list(range(n_trees + 1))
    model["gbtree_model_param"]["num_trees"] = str(n_trees)
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "xgboost-model").write_text(json.dumps(document))


def _full_tree(index: int, depth: int, n_features: int, rng: np.random.Generator) -> dict[str, Any]:
    n_inner, n_nodes = 2**depth - 1, 2 ** (depth + 1) - 1
    nodes = np.arange(n_nodes)
    inner = nodes < n_inner
    values = np.where(inner, rng.normal(size=n_nodes), rng.normal(scale=0.05, size=n_nodes))
    return {
        "base_weights": [0.0] * n_nodes,
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": rng.integers(0, 2, n_nodes).tolist(),
        "id": index,
        "left_children": np.where(inner, 2 * nodes + 1, -1).tolist(),
        "right_children": np.where(inner, 2 * nodes + 2, -1).tolist(),
        "loss_changes": [0.0] * n_nodes,
        "parents": [2147483647, *((nodes[1:] - 1) // 2).tolist()],
        "split_conditions": values.astype(np.float32).tolist(),
        "split_indices": np.where(inner, rng.integers(0, n_features, n_nodes), 0).tolist(),
        "split_type": [0] * n_nodes,
        "sum_hessian": [1.0] * n_nodes,
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(n_features),
            "num_nodes": str(n_nodes),
            "size_leaf_vector": "1",
        },
    }


def v2_body(matrix: np.ndarray) -> bytes:
    """``matrix`` as one V2 (Open Inference Protocol) JSON infer request: an FP32 tensor
    ``input-0``, values rounded to 6 decimals as a client writing JSON would send them."""
    data = matrix.astype(float).round(6).tolist()
    tensor = {"name": "input-0", "shape": list(matrix.shape), "datatype": "FP32", "data": data}
    return json.dumps({"inputs": [tensor]}).encode()


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


def register_models(port: int, names: tuple[str, ...]) -> None:
    """Load each model into a multi-model server (SageMaker's LoadModel call), its folder
    under the models directory named as the model."""
    for name in names:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        body = json.dumps({"model_name": name, "url": name})
        headers = {"Content-Type": "application/json"}
        connection.request("POST", "/models", body=body, headers=headers)
        response = connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"loading {name}: {response.status} {response.read()[:300]!r}")
        connection.close()


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


def p50_ms(call: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    """The median of ``repeat`` timed calls, in ms, after ``warmup`` untimed ones."""
    return percentile(timings_ms(call, repeat, warmup), 50)


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
