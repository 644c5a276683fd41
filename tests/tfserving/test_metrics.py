"""Prometheus text, histogram buckets, and summing per-process files; the run directory."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from smserve.config import Settings
from smserve.metrics import Metrics
from smserve.repository import runtime
from smserve.tfserving.metrics import BUCKET_LIMITS, NAMES


def test_buckets_are_tf_servings() -> None:
    assert len(BUCKET_LIMITS) == 33
    assert BUCKET_LIMITS[:3] == (10.0, 18.0, 32.4)
    assert abs(BUCKET_LIMITS[-1] - 10 * 1.8**32) < 1e-6 * BUCKET_LIMITS[-1]


def test_render_without_a_directory() -> None:
    metrics = Metrics(None)
    metrics.record(NAMES, "m", 200, "predict", 15e-6)
    metrics.record(NAMES, "m", 400, "predict", None)
    lines = metrics.render(NAMES).splitlines()
    assert lines[0] == "# TYPE :tensorflow:serving:request_count counter"
    assert ':tensorflow:serving:request_count{model_name="m",status="OK"} 1' in lines
    assert ':tensorflow:serving:request_count{model_name="m",status="INVALID_ARGUMENT"} 1' in lines
    assert "# TYPE :tensorflow:serving:request_latency histogram" in lines
    prefix = (
        ':tensorflow:serving:request_latency_bucket{model_name="m",API="predict",entrypoint="REST",'
    )
    assert f'{prefix}le="10"}} 0' in lines
    assert f'{prefix}le="18"}} 1' in lines
    assert f'{prefix}le="+Inf"}} 1' in lines
    labels = '{model_name="m",API="predict",entrypoint="REST"}'
    assert f":tensorflow:serving:request_latency_sum{labels} 15" in lines
    assert f":tensorflow:serving:request_latency_count{labels} 1" in lines


def test_label_values_are_escaped() -> None:
    metrics = Metrics(None)
    metrics.record(NAMES, 'a"b\\c', 200, "", 1e-6)
    assert 'model_name="a\\"b\\\\c"' in metrics.render(NAMES)


def test_files_of_several_processes_are_summed(tmp_path: Path) -> None:
    first, second = Metrics(tmp_path), Metrics(tmp_path)
    for _ in range(3):
        first.record(NAMES, "m", 200, "predict", 1e-4)
    second.record(NAMES, "m", 200, "predict", 1e-4)
    first.flush()
    text = second.render(NAMES)
    assert ':tensorflow:serving:request_count{model_name="m",status="OK"} 4' in text
    assert 'request_latency_count{model_name="m",API="predict",entrypoint="REST"} 4' in text
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_run_directories_are_fresh_per_run_and_shared_once_prepared(tmp_path: Path) -> None:
    parent = Settings(runtime_dir=tmp_path)
    prepared = runtime.prepare(parent)
    assert prepared.runtime_dir is not None
    assert prepared.runtime_dir.parent == tmp_path
    assert runtime.prepare(prepared) == prepared
    assert runtime.run_dir(prepared) == prepared.runtime_dir
    assert runtime.prepare(parent).runtime_dir != prepared.runtime_dir
    assert (prepared.runtime_dir / runtime.MARKER).read_text() == str(os.getpid())


def test_concurrent_records_and_scrapes_lose_nothing(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    threads = [
        threading.Thread(
            target=lambda: [metrics.record(NAMES, "m", 200, "predict", 5e-6) for _ in range(200)]
        )
        for _ in range(4)
    ]
    scraper = threading.Thread(target=lambda: [metrics.render(NAMES) for _ in range(20)])
    for thread in [*threads, scraper]:
        thread.start()
    for thread in [*threads, scraper]:
        thread.join()
    assert ':tensorflow:serving:request_count{model_name="m",status="OK"} 800' in metrics.render(
        NAMES
    )
    assert len(list(tmp_path.glob("*.json"))) == 1
