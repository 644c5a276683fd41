"""The ``smserve_`` page (Prometheus text 0.0.4): every worker's counts summed, the master's
count of worker restarts, and the memory of the server's processes.

Which metrics, and why each is what it is, is listed in docs/monitoring.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from smserve.metrics import processes
from smserve.metrics.exposition import COUNTER, GAUGE, HISTOGRAM, family, labels, sample
from smserve.metrics.serving import ServingCounts

P = "smserve_"


def render(files: Iterable[Mapping[str, Any]], roles: Mapping[str, Iterable[int]]) -> str:
    """The page for the counts ``files`` hold and the processes of each role."""
    total = ServingCounts()
    for data in files:
        total.add_json(data.get("serving", {}))
    sections = (_requests(total), _models(total), _workers(total, processes.usage(roles)))
    return "\n".join(line for section in sections for line in section) + "\n"


def _requests(counts: ServingCounts) -> list[str]:
    lines = family(f"{P}requests_total", COUNTER, "Requests answered by a door.")
    for (door, model, fmt, status), (n, _, _) in sorted(counts.requests.items()):
        label_text = labels(door=door, model=model, format=fmt, status=str(status))
        lines.append(sample(f"{P}requests_total", label_text, n))
    for index, direction in ((1, "request"), (2, "response")):
        name = f"{P}{direction}_payload_bytes_total"
        lines += family(name, COUNTER, f"Bytes of {direction} bodies.")
        lines += _by_door_and_model(counts, index, name)
    name = f"{P}request_duration_seconds"
    lines += family(name, HISTOGRAM, "Time a worker took to answer a request (2xx only).")
    for (door, model), histogram in sorted(counts.duration.items()):
        lines += histogram.lines(name, labels(door=door, model=model))
    name = f"{P}inference_stage_duration_seconds"
    lines += family(name, HISTOGRAM, "Decode, predict and encode times of invocations.")
    for (model, stage), histogram in sorted(counts.stages.items()):
        lines += histogram.lines(name, labels(model=model, stage=stage))
    lines += family(f"{P}requests_in_flight", GAUGE, "Requests being answered by workers.")
    return [*lines, sample(f"{P}requests_in_flight", "", counts.in_flight)]


def _by_door_and_model(counts: ServingCounts, index: int, name: str) -> list[str]:
    sums: dict[tuple[str, str], int] = {}
    for (door, model, _, _), values in counts.requests.items():
        sums[(door, model)] = sums.get((door, model), 0) + values[index]
    return [sample(name, labels(door=d, model=m), n) for (d, m), n in sorted(sums.items())]


def _models(counts: ServingCounts) -> list[str]:
    lines = family(f"{P}model_loads_total", COUNTER, "Model loads by the workers, by result.")
    for result, n in sorted(counts.loads.items()):
        lines.append(sample(f"{P}model_loads_total", labels(result=result), n))
    name = f"{P}model_load_duration_seconds"
    lines += family(name, HISTOGRAM, "Time to load a model (successful loads).")
    lines += counts.load_duration.lines(name, "")
    loaded = counts.models_loaded
    for name, kind, text, value in (
        ("models_loaded", GAUGE, "Models served now (the most any worker holds).", loaded),
        ("model_loads_refused_total", COUNTER, "Multi-model loads answered 507.", counts.refused),
        ("model_unloads_total", COUNTER, "Multi-model unloads (evictions).", counts.unloads),
    ):
        lines += family(f"{P}{name}", kind, text)
        lines.append(sample(f"{P}{name}", "", value))
    return lines


def _workers(counts: ServingCounts, usage: Mapping[str, processes.Usage]) -> list[str]:
    lines = family(f"{P}worker_restarts_total", COUNTER, "Worker processes that exited.")
    lines.append(sample(f"{P}worker_restarts_total", "", counts.worker_restarts))
    if not usage:
        return lines
    name = f"{P}process_resident_memory_bytes"
    lines += family(name, GAUGE, "Resident memory of the server's processes, by role.")
    lines += [sample(name, labels(process=r), u.resident_bytes) for r, u in sorted(usage.items())]
    lines += family(f"{P}processes", GAUGE, "Processes of the server, by role.")
    return lines + [
        sample(f"{P}processes", labels(process=r), u.processes) for r, u in sorted(usage.items())
    ]
