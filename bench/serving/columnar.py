"""Columnar bodies and CSV at Arrow speed: 10,000 x 50 requests over HTTP in CSV, Parquet
and Arrow IPC stream (each answered in its own format), the 1-row CSV request, and the
in-process numpy floor (np.loadtxt + predict + format) measured in the same run; plus the
CSV decode alone, numpy path against the Arrow path. XGBoost: 100 trees, depth 6, 50
features (``harness.build_xgboost``); and where the CSV request's time goes in-process
(decode, predict, encode, and the whole service call, so HTTP's share is the rest), and the
transport alone: the 4.6 MB CSV body sent with a content type no codec takes, answered 415
after the whole body is read (client -> nginx -> gunicorn, no decode or predict). Prints
timings and the target ratio (CSV -> CSV <= 0.6x the floor); asserts nothing.

``--against <src>`` instead compares two trees on a shared machine: this one and another
tree's ``src`` (a ``git archive`` copy, run with PYTHONPATH), both serving at once, in
``--blocks`` alternated blocks of ``--repeat-large`` CSV -> CSV requests and 1-row requests,
with the floor measured before each block; prints each tree's median of block p50s, its
ratio to the median floor, and the 1-row p50.

    .venv/bin/python bench/serving/columnar.py [--repeat-small 2000] [--repeat-large 20]
    .venv/bin/python bench/serving/columnar.py --against /tmp/prev/src [--blocks 10] \\
        [--repeat-large 20]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.serving import http_csv  # noqa: E402
from bench.shared import harness  # noqa: E402
from smserve import media  # noqa: E402
from smserve.algorithms.loading import load_algorithm  # noqa: E402
from smserve.codecs import default_registry  # noqa: E402
from smserve.codecs.csv import CsvCodec  # noqa: E402
from smserve.codecs.text import load_numbers  # noqa: E402
from smserve.config import Settings  # noqa: E402
from smserve.service import InferenceService  # noqa: E402


def bodies(matrix: np.ndarray) -> dict[str, bytes]:
    table = pa.table({f"f{i}": matrix[:, i] for i in range(matrix.shape[1])})
    parquet, stream = io.BytesIO(), pa.BufferOutputStream()
    pq.write_table(table, parquet)
    with pa.ipc.new_stream(stream, table.schema) as writer:
        writer.write_table(table)
    return {
        media.CSV: harness.csv_body(matrix),
        media.PARQUET: parquet.getvalue(),
        media.ARROW_STREAM: bytes(stream.getvalue()),
    }


def decode_only(body: bytes, repeat: int) -> None:
    codec, parsed = CsvCodec(), media.MediaType(media.CSV)
    numpy_path = harness.timings_ms(lambda: load_numbers(body.decode(), ",", np.float32), repeat)
    arrow_path = harness.timings_ms(lambda: codec.decode(body, parsed), repeat)
    print(f"  CSV decode 10k x 50, numpy path   {harness.summary(numpy_path)}")
    print(f"  CSV decode 10k x 50, codec (Arrow) {harness.summary(arrow_path)}")


def stages(model_dir: Path, body: bytes, repeat: int) -> None:
    """The CSV -> CSV request in-process, stage by stage (p50 each)."""
    settings = Settings(model_dir=model_dir, workers=1)
    algorithm = load_algorithm(settings)
    service = InferenceService(algorithm, default_registry(settings), settings)
    codec, parsed = CsvCodec(), media.MediaType(media.CSV)
    batch = codec.decode(body, parsed)
    prediction = algorithm.predict(batch)
    for name, call in [
        ("decode", lambda: codec.decode(body, parsed)),
        ("predict", lambda: algorithm.predict(batch)),
        ("encode", lambda: codec.encode(prediction)),
        ("service.invoke (all)", lambda: service.invoke(body, media.CSV, media.CSV)),
    ]:
        samples = harness.timings_ms(call, repeat, 2)
        print(f"  in-process CSV -> CSV {name:<21} p50 {harness.percentile(samples, 50):7.3f} ms")


def transport(client: harness.Client, body: bytes, repeat: int) -> None:
    """The big body read and refused (415) by the server: what HTTP costs before any decode."""
    headers = {"Content-Type": "application/x-smserve-bench", "Accept": media.CSV}

    def refused() -> None:
        client.conn.request("POST", "/invocations", body=body, headers=headers)
        response = client.conn.getresponse()
        response.read()
        if response.status != 415:
            raise RuntimeError(f"HTTP {response.status}, expected 415")

    samples = harness.timings_ms(refused, repeat, warmup=2)
    print(f"  HTTP 4.58 MB body refused 415 (transport) {harness.summary(samples)}")


def alternated(model_dir: Path, against: str, blocks: int, repeat: int, repeat_small: int) -> None:
    """This tree and ``against`` serving at once, measured in alternated blocks (p50s)."""
    floor = http_csv.xgboost_floor(model_dir)
    large, small = harness.csv_body(harness.rows(10_000)), harness.csv_body(harness.rows(1))
    trees: dict[str, dict[str, str]] = {
        "this tree": {},
        f"against {against}": {"PYTHONPATH": against},
    }
    big: dict[str, list[float]] = {name: [] for name in trees}
    one: dict[str, list[float]] = {name: [] for name in trees}
    floors: list[float] = []
    with contextlib.ExitStack() as stack:
        posts = {
            name: harness.Client(stack.enter_context(harness.server(model_dir, 1, **env))).post
            for name, env in trees.items()
        }
        for block in range(blocks):
            floors.append(harness.p50_ms(lambda: floor(large), max(5, repeat // 2), 2))
            for name in list(trees) if block % 2 == 0 else list(trees)[::-1]:
                post = posts[name]
                big[name].append(
                    harness.p50_ms(lambda p=post: p(large, media.CSV, media.CSV), repeat, 2)
                )
                one[name].append(
                    harness.p50_ms(lambda p=post: p(small, media.CSV, media.CSV), repeat_small, 20)
                )
    floor_ms = statistics.median(floors)
    print(f"  floor 10k x 50 (numpy), median of {blocks} block p50s: {floor_ms:.2f} ms")
    for name in trees:
        ms = statistics.median(big[name])
        print(
            f"  {name}: HTTP CSV -> CSV {ms:.2f} ms = {ms / floor_ms:.2f}x floor (target <= 0.6x), "
            f"blocks {' '.join(f'{x:.1f}' for x in big[name])}; "
            f"1 row p50 {statistics.median(one[name]):.3f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat-small", type=int, default=2000)
    parser.add_argument("--repeat-large", type=int, default=20)
    parser.add_argument("--against", help="another tree's src directory, compared alternately")
    parser.add_argument("--blocks", type=int, default=10)
    args = parser.parse_args()
    if args.against is not None:
        with tempfile.TemporaryDirectory() as tmp:
            alternated(Path(tmp), args.against, args.blocks, args.repeat_large, args.repeat_small)
        return
    large, small = bodies(harness.rows(10_000)), harness.csv_body(harness.rows(1))
    with tempfile.TemporaryDirectory() as tmp:
        floor = http_csv.xgboost_floor(Path(tmp))
        decode_only(large[media.CSV], args.repeat_large)
        stages(Path(tmp), large[media.CSV], args.repeat_large)
        floor_large = harness.timings_ms(lambda: floor(large[media.CSV]), args.repeat_large, 2)
        floor_mean = statistics.fmean(floor_large)
        print(f"  floor 10k x 50 (numpy)  {harness.summary(floor_large)}")
        with harness.server(Path(tmp), workers=1) as port:
            post = harness.Client(port).post
            one = harness.timings_ms(lambda: post(small, media.CSV, media.CSV), args.repeat_small)
            print(f"  HTTP CSV 1 row          {harness.summary(one)}")
            csv_ratio = float("nan")
            for content_type, body in large.items():
                samples = harness.timings_ms(
                    lambda b=body, t=content_type: post(b, t, t), args.repeat_large, warmup=2
                )
                ratio = statistics.fmean(samples) / floor_mean
                print(
                    f"  HTTP {content_type:<36} {len(body) / 1e6:.2f} MB  "
                    f"{harness.summary(samples)}  {ratio:.2f}x floor"
                )
                if content_type == media.CSV:
                    csv_ratio = ratio
            transport(harness.Client(port), large[media.CSV], args.repeat_large)
        print(f"  CSV -> CSV 10k x 50 / numpy floor (means): {csv_ratio:.2f}x   (target <= 0.6x)")


if __name__ == "__main__":
    main()
