"""The smserve_ page: counts from several workers' files summed, gauges merged as documented,
histograms cumulative with +Inf, labels escaped, and the text parseable as Prometheus 0.0.4."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from smserve.metrics import Answered, Metrics, count_worker_exit, page
from smserve.metrics.exposition import Histogram, escape, labels, number
from smserve.metrics.serving import DURATION_LIMITS, MAX_SERIES, ServingCounts
from smserve.metrics.store import read_all
from smserve.tfserving.metrics import NAMES

LABEL = r'[a-zA-Z_]\w*="(?:[^"\\]|\\.)*"'
SAMPLE = re.compile(rf"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{{{LABEL}(?:,{LABEL})*\}})? (\S+)$")


def answered(status: int = 200, model: str = "m", seconds: float = 0.002) -> Answered:
    key = ("sagemaker", model, "text/csv", status)
    return Answered(key, seconds, (10, 20), None, "invocations")


def parse(text: str) -> dict[str, float]:
    """``name{labels}`` -> value for every sample; fails on any line that is not 0.0.4."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        match = SAMPLE.match(line)
        assert match is not None, line
        samples[line.rsplit(" ", 1)[0]] = float(match.group(3))
    return samples


def test_counts_of_several_workers_are_summed(tmp_path: Path) -> None:
    first, second = Metrics(tmp_path), Metrics(tmp_path)
    for metrics, n in ((first, 3), (second, 2)):
        for _ in range(n):
            metrics.begin()
            metrics.finish(answered(), (NAMES,))
        metrics.flush()
    second.begin()  # one still in flight
    second.flush()
    samples = parse(page.render(read_all(tmp_path), {}))
    key = 'smserve_requests_total{door="sagemaker",model="m",format="text/csv",status="200"}'
    assert samples[key] == 5
    assert samples['smserve_request_payload_bytes_total{door="sagemaker",model="m"}'] == 50
    assert samples['smserve_response_payload_bytes_total{door="sagemaker",model="m"}'] == 100
    assert samples["smserve_requests_in_flight"] == 1
    duration = 'smserve_request_duration_seconds_count{door="sagemaker",model="m"}'
    assert samples[duration] == 5
    # TF Serving's names come from the same files, at their own path
    assert ':tensorflow:serving:request_count{model_name="m",status="OK"} 5' in first.render(NAMES)


def test_the_latency_histogram_is_cumulative_in_seconds(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    for seconds in (0.0004, 0.0005, 0.003, 7.0, 5000.0):
        metrics.begin()
        metrics.finish(answered(seconds=seconds))
    samples = parse(page.render(metrics.all_counts(), {}))
    bucket = 'smserve_request_duration_seconds_bucket{door="sagemaker",model="m",le="%s"}'
    assert samples[bucket % "0.00025"] == 0
    assert samples[bucket % "0.0005"] == 2  # le: a value equal to a limit is in its bucket
    assert samples[bucket % "0.005"] == 3
    assert samples[bucket % "10"] == 4
    assert samples[bucket % "3600"] == 4
    assert samples[bucket % "+Inf"] == 5
    total = samples['smserve_request_duration_seconds_sum{door="sagemaker",model="m"}']
    assert total == pytest.approx(5007.0039)


def test_only_successes_are_timed_but_every_status_is_counted(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    for status in (200, 415, 500):
        metrics.begin()
        metrics.finish(answered(status=status))
    samples = parse(page.render(metrics.all_counts(), {}))
    statuses = [k for k in samples if k.startswith("smserve_requests_total")]
    assert len(statuses) == 3
    assert samples['smserve_request_duration_seconds_count{door="sagemaker",model="m"}'] == 1


def test_stages_are_histograms_per_model(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    metrics.begin()
    stages = (0.001, 0.02, 0.0003)
    metrics.finish(Answered(("sagemaker", "m", "", 200), 0.03, (1, 1), stages, "invocations"))
    samples = parse(page.render(metrics.all_counts(), {}))
    for stage, seconds in zip(("decode", "predict", "encode"), stages, strict=True):
        labels_text = f'model="m",stage="{stage}"'
        assert samples[f"smserve_inference_stage_duration_seconds_sum{{{labels_text}}}"] == seconds
        assert samples[f"smserve_inference_stage_duration_seconds_count{{{labels_text}}}"] == 1


def test_model_events_and_worker_restarts(tmp_path: Path) -> None:
    first, second = Metrics(tmp_path, models_loaded=lambda: 3), Metrics(tmp_path, lambda: 2)
    first.model_loaded(0.2, succeeded=True)
    first.model_loaded(0.1, succeeded=False)
    second.model_loaded(4.0, succeeded=True)
    second.model_refused()
    first.model_unloaded()
    first.flush()
    count_worker_exit(tmp_path)
    count_worker_exit(tmp_path)
    samples = parse(page.render(second.all_counts(), {}))
    assert samples['smserve_model_loads_total{result="success"}'] == 2
    assert samples['smserve_model_loads_total{result="failure"}'] == 1
    assert samples["smserve_model_load_duration_seconds_count"] == 2
    assert samples['smserve_model_load_duration_seconds_bucket{le="0.25"}'] == 1
    assert samples["smserve_models_loaded"] == 3  # the most any worker holds, not the sum
    assert samples["smserve_model_loads_refused_total"] == 1
    assert samples["smserve_model_unloads_total"] == 1
    assert samples["smserve_worker_restarts_total"] == 2


def test_process_memory_by_role() -> None:
    roles = {"worker": [os.getpid(), os.getpid()], "nginx": [2**22 + 12345]}  # one gone
    samples = parse(page.render([], roles))
    assert samples['smserve_processes{process="worker"}'] == 2
    assert samples['smserve_processes{process="nginx"}'] == 0
    resident = samples['smserve_process_resident_memory_bytes{process="worker"}']
    assert resident > 2 * 10 * 2**20  # this Python process, twice


def test_hostile_label_values_are_escaped_and_bounded() -> None:
    counts = ServingCounts()
    counts.count(("sagemaker", 'a"b\\c\nd', "", 200), 0, 0)
    text = page.render([{"serving": counts.to_json()}], {})
    assert 'model="a\\"b\\\\c\\nd"' in text
    parse(text)
    for index in range(MAX_SERIES + 5):
        counts.count(("sagemaker", f"m{index}", "", 200), 0, 0)
    assert len(counts.requests) == MAX_SERIES + 1  # the rest share one "other" series
    assert counts.requests[("sagemaker", "other", "", 200)][0] == 6


def test_every_family_has_help_and_type_and_counters_end_in_total(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    metrics.begin()
    metrics.finish(answered())
    text = page.render(metrics.all_counts(), {"worker": [os.getpid()]})
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    assert set(re.findall(r"^# HELP (\S+) ", text, re.MULTILINE)) == set(types)
    assert all(name.startswith("smserve_") for name in types)
    assert all(name.endswith("_total") for name, kind in types.items() if kind == "counter")
    assert all(
        name.endswith(("_seconds", "_bytes")) or kind != "histogram" for name, kind in types.items()
    )


def test_exposition_helpers() -> None:
    assert labels(a="x", b='"') == 'a="x",b="\\""'
    assert escape("a\\b") == "a\\\\b"
    assert (number(3), number(2.0), number(0.25), number(1e-05)) == ("3", "2", "0.25", "1e-05")
    histogram = Histogram(DURATION_LIMITS)
    with pytest.raises(ValueError, match="different buckets"):
        histogram.add([1, 2], 0.0)
