"""BENCHMARKS.md's plots are drawn from the figures it quotes (bench/plots_data.json).

Every latency, big-batch and cold-start figure the plots draw appears in BENCHMARKS.md as
written there, and every plot bench/plots.py writes is committed and shown in BENCHMARKS.md.
"""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLOTS = ("latency", "big-batches", "hostile", "cold-start")


def data() -> dict[str, dict[str, object]]:
    loaded: dict[str, dict[str, object]] = json.loads(
        (ROOT / "bench" / "plots_data.json").read_text()
    )
    return loaded


def figures(node: object) -> list[float]:
    if isinstance(node, dict):
        return [f for key, value in node.items() if not key.startswith("_") for f in figures(value)]
    if isinstance(node, list):
        return [f for value in node for f in figures(value)]
    return [node] if isinstance(node, (int, float)) and not isinstance(node, bool) else []


def test_every_plotted_figure_is_quoted_in_benchmarks() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    quoted = {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}
    sections = [data()[key] for key in ("latency", "big_batches", "cold_start")]
    missing = [value for value in figures(sections) if value not in quoted]
    assert not missing


def test_every_hostile_case_is_within_its_limits() -> None:
    hostile = data()["hostile"]
    limits, cases = hostile["limits"], hostile["cases"]
    assert isinstance(limits, dict)
    assert isinstance(cases, list)
    assert len(cases) == 45  # "45 cases, 45 within every limit"
    for name, status, ms, worker_mb, nginx_mb in cases:
        assert status < 500, name
        assert ms < limits["time_ms"], name
        assert worker_mb < limits["worker_mb"], name
        assert nginx_mb < limits["nginx_mb"], name


def test_every_plot_is_committed_and_shown() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    script = (ROOT / "bench" / "plots.py").read_text()
    for name in PLOTS:
        assert (ROOT / "docs" / "img" / f"{name}.png").is_file()
        assert f"](docs/img/{name}.png)" in text
        assert f'"{name}"' in script
