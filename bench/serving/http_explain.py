"""Explanations over real HTTP (gunicorn, one worker, keep-alive), beside the plain predict
in the same run: XGBoost binary:logistic, 100 trees of depth 6, 50 features.

Per-request outputs go in X-Amzn-SageMaker-Custom-Attributes (``outputs=<key>``); the plain
request sends none (the endpoint default, ``score``). CSV in; CSV out and RecordIO out (where
the 51 values per row are cheapest to write). Targets: 1 row with ``contributions`` <= 3x the
plain 1-row p50; 10,000 rows with ``approximate_contributions`` <= 2x the plain 10,000-row
request (mean); the exact 10,000-row cost is reported. Before the HTTP runs, the 10,000-row
requests in-process, stage by stage (decode, predict, CSV and RecordIO encode): where the
time goes; and the CPU time of the approximate prediction on the worker's threads and sparing
one (as an overlap's chunks are predicted).

    .venv/bin/python bench/serving/http_explain.py [--repeat-small 1000] [--repeat-large 10]
        [--frontend auto|nginx|gunicorn]   (SMSERVE_FRONTEND for the server)
        [--workers N]   (the server's; 1 by default: one request gets the machine's CPUs)

``--against <src>`` instead compares two trees on a shared machine: a server of this tree and
one of ``<src>`` (``PYTHONPATH``) run at once and are asked in turn, plain and approximate
10,000-row CSV -> CSV requests, and each tree's ratio of medians and of means is printed.

    .venv/bin/python bench/serving/http_explain.py --against /tmp/prev/src [--repeat-large 60]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared import harness  # noqa: E402
from smserve import media  # noqa: E402
from smserve.algorithms.loading import load_algorithm  # noqa: E402
from smserve.codecs.csv import CsvCodec  # noqa: E402
from smserve.codecs.recordio.codec import RecordioCodec  # noqa: E402
from smserve.config import Settings  # noqa: E402
from smserve.http.process import tune_malloc  # noqa: E402

ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"
CSV, RECORDIO = "text/csv", "application/x-recordio-protobuf"
KEYS = (None, "approximate_contributions", "contributions")


def post(client: harness.Client, body: bytes, accept: str, key: str | None) -> bytes:
    headers = {"Content-Type": CSV, "Accept": accept}
    if key is not None:
        headers[ATTRIBUTES] = f"outputs={key}"
    client.conn.request("POST", "/invocations", body=body, headers=headers)
    response = client.conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
    return data


def interleaved(
    client: harness.Client, body: bytes, accept: str, keys: tuple[str | None, ...], n: int
) -> dict[str | None, list[float]]:
    """``n`` timings per key, the keys taken in turn, so a load that comes and goes on the
    machine weighs on each alike."""
    samples: dict[str | None, list[float]] = {key: [] for key in keys}
    for _ in range(min(n, 20)):  # warm-up
        for key in keys:
            post(client, body, accept, key)
    for _ in range(n):
        for key in keys:
            samples[key] += harness.timings_ms(lambda k=key: post(client, body, accept, k), 1, 0)
    return samples


def small(client: harness.Client, repeat: int) -> None:
    body = harness.csv_body(harness.rows(1))
    samples = interleaved(client, body, CSV, KEYS, repeat)
    for key in KEYS:
        print(f"  1 row      {key or 'plain':26s} {harness.summary(samples[key])}")
    p50 = {key: harness.percentile(values, 50) for key, values in samples.items()}
    ratio = p50["contributions"] / p50[None]
    print(f"  1-row contributions / plain (p50): {ratio:.2f}x   (target <= 3x)")


def large(client: harness.Client, repeat: int, accept: str) -> None:
    body = harness.csv_body(harness.rows(10_000))
    samples = interleaved(client, body, accept, KEYS[:2], repeat)
    samples.update(interleaved(client, body, accept, KEYS[2:], max(3, repeat // 4)))
    mean = {key: statistics.fmean(values) for key, values in samples.items()}
    for key in KEYS:
        print(f"  10k x 50 -> {accept:31s} {key or 'plain':26s} {harness.summary(samples[key])}")
    approx = mean["approximate_contributions"] / mean[None]
    exact = mean["contributions"] / mean[None]
    print(f"  10k approximate / plain (mean): {approx:.2f}x   (target <= 2x)")
    print(f"  10k exact / plain (mean): {exact:.2f}x   (reported; exact timed after the others)")


def stages(model_dir: Path, repeat: int) -> None:
    """p50 of each in-process stage of the 10,000-row request, plain and approximate (with
    malloc tuned as ``smserve serve`` tunes it)."""
    tune_malloc(os.environ)
    algorithm = load_algorithm(Settings(model_dir=model_dir, workers=1))
    codec, recordio, parsed = CsvCodec(), RecordioCodec(), media.MediaType(media.CSV)
    body = harness.csv_body(harness.rows(10_000))
    batch = codec.decode(body, parsed)
    p50 = {"decode CSV": harness.p50_ms(lambda: codec.decode(body, parsed), repeat)}
    for key in (None, "approximate_contributions"):
        outputs = None if key is None else (key,)
        prediction = algorithm.predict(batch, outputs)
        name = key or "plain"
        p50[f"predict {name}"] = harness.p50_ms(
            lambda o=outputs: algorithm.predict(batch, o), repeat
        )
        p50[f"encode {name} CSV"] = harness.p50_ms(lambda p=prediction: codec.encode(p), repeat)
        p50[f"encode {name} RecordIO"] = harness.p50_ms(
            lambda p=prediction: recordio.encode(p), repeat
        )
    for stage, value in p50.items():
        print(f"  in-process 10k x 50 {stage:<40} p50 {value:7.3f} ms")
    for spare_cpu in (False, True):  # as an overlap's chunks ask (one thread of two)
        call = partial(algorithm.predict, batch, ("approximate_contributions",), spare_cpu)
        name = "predict approximate, sparing a CPU" if spare_cpu else "predict approximate"
        print(f"  in-process 10k x 50 {name:<40} CPU {_cpu_ms(call, repeat):7.3f} ms a call")


def _cpu_ms(call: Callable[[], object], repeat: int) -> float:
    """The process's CPU time per call (every thread's), after two warm-up calls."""
    call(), call()
    start = time.process_time()
    for _ in range(repeat):
        call()
    return (time.process_time() - start) * 1e3 / repeat


def alternated(model_dir: Path, against: str, repeat: int, frontend: str) -> None:
    """This tree and ``against`` serving at once, their requests taken in turn."""
    trees = {"this tree": {}, f"against {against}": {"PYTHONPATH": against}}
    body, keys = harness.csv_body(harness.rows(10_000)), KEYS[:2]
    with contextlib.ExitStack() as stack:
        clients = {
            name: harness.Client(
                stack.enter_context(harness.server(model_dir, 1, SMSERVE_FRONTEND=frontend, **env))
            )
            for name, env in trees.items()
        }
        samples: dict[tuple[str, str | None], list[float]] = {
            (name, key): [] for name in clients for key in keys
        }
        for round_ in range(repeat + 10):  # the first 10 rounds warm up
            for (name, key), values in samples.items():
                client = clients[name]
                values += harness.timings_ms(lambda c=client, k=key: post(c, body, CSV, k), 1, 0)
                if round_ < 10:
                    values.clear()
    for name in clients:
        plain, approx = (samples[(name, key)] for key in keys)
        medians = statistics.median(approx) / statistics.median(plain)
        means = statistics.fmean(approx) / statistics.fmean(plain)
        print(
            f"  {name}: plain median {statistics.median(plain):.1f} ms, approximate "
            f"{statistics.median(approx):.1f} ms: ratio of medians {medians:.2f}x, "
            f"of means {means:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat-small", type=int, default=1000)
    parser.add_argument("--repeat-large", type=int, default=10)
    parser.add_argument("--frontend", default="auto")
    parser.add_argument("--workers", type=int, default=1, help="of the HTTP runs' server")
    parser.add_argument("--against", help="another tree's src directory, compared alternately")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp, "xgb")
        harness.build_xgboost(model_dir)
        if args.against is not None:
            alternated(model_dir, args.against, args.repeat_large, args.frontend)
            return
        stages(model_dir, max(10, args.repeat_large))
        with harness.server(model_dir, args.workers, SMSERVE_FRONTEND=args.frontend) as port:
            client = harness.Client(port)
            workers = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
            print(f"== xgboost (100 trees, depth 6, 50 features), {workers}, {args.frontend}")
            small(client, args.repeat_small)
            for accept in (CSV, RECORDIO):
                large(client, args.repeat_large, accept)


if __name__ == "__main__":
    main()
