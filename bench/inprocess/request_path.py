"""Benchmark: the HTTP layer's cost per request, in process: a raw WSGI call of the app (no
sockets, no test client) for a 1-row ``POST /invocations``, ``GET /v2/models/<name>``, TF
Serving's ``GET /v1/models/<name>`` and a multi-model ``GET /models`` (three models loaded),
each over a tiny k-means model. Prints the
median microseconds per request of 5 rounds; asserts nothing.

    .venv/bin/python bench/inprocess/request_path.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from smserve.algorithms.ndarray import write_ndarray_file
from smserve.config import Settings
from smserve.http.app import create_app
from smserve.repository import runtime

Environ = Callable[[], dict[str, Any]]


def environ(method: str, path: str, body: bytes = b"", **headers: str) -> Environ:
    base = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "RAW_URI": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "CONTENT_LENGTH": str(len(body)) if body else "",
        **{
            ("CONTENT_TYPE" if k == "content_type" else f"HTTP_{k.upper()}"): v
            for k, v in headers.items()
        },
    }
    return lambda: {**base, "wsgi.input": io.BytesIO(body)}


def per_request_us(app: Callable[..., Iterable[bytes]], make: Environ, count: int) -> float:
    statuses: list[str] = []

    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        statuses.append(status)

    rounds = []
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(count):
            b"".join(app(make(), start))
        rounds.append((time.perf_counter() - began) / count * 1e6)
    assert statuses[-1].startswith("200"), statuses[-1]
    return statistics.median(rounds)


def model_dir(root: Path) -> Path:
    root.mkdir(parents=True)
    centroids = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    write_ndarray_file(root / "model_algo-1", centroids)
    return root


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    count = parser.parse_args().requests
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        single = Settings(model_dir=model_dir(tmp / "model"), runtime_dir=tmp / "run1")
        app = create_app(runtime.prepare(single))
        row = environ("POST", "/invocations", b"0,0,0,0\n", content_type="text/csv")
        print(f"POST /invocations 1 row: {per_request_us(app, row, count):.1f} us")
        meta = environ("GET", "/v2/models/model")
        print(f"GET /v2/models/model:    {per_request_us(app, meta, count):.1f} us")
        status = environ("GET", "/v1/models/model")
        print(f"GET /v1/models/model:    {per_request_us(app, status, count):.1f} us")
        for name in "abc":
            model_dir(tmp / "models" / name)
        multi = Settings(multi_model=True, models_dir=tmp / "models", runtime_dir=tmp / "run2")
        mme = create_app(runtime.prepare(multi))
        client = mme.test_client()
        for name in "abc":
            client.post("/models", json={"model_name": name, "url": name})
        listing = environ("GET", "/models")
        print(f"GET /models (3 models):  {per_request_us(mme, listing, count):.1f} us")


if __name__ == "__main__":
    main()
