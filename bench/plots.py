"""Draw BENCHMARKS.md's plots (docs/img/*.png) from the figures in bench/plots_data.json.

    .venv/bin/python bench/plots.py            # needs matplotlib (not a dependency of smserve)

The data file holds the figures BENCHMARKS.md quotes, copied from the runs it names; this
script measures nothing. Change a figure in both places, then rerun it and commit the PNGs.
"""

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "plots_data.json"
OUT = ROOT / "docs" / "img"
OURS, PEER, FLOOR = "#1f77b4", "#b0b0b0", "#2ca02c"


def colours(names: list[str]) -> list[str]:
    return [OURS if "smserve" in n else FLOOR if "floor" in n else PEER for n in names]


def latency(plt: Any, data: dict[str, Any]) -> Any:
    figure, axes = plt.subplots(2, 2, figsize=(11, 6.5), sharey="row")
    servers = data["servers"]
    for column, (model, figures) in enumerate(data["models"].items()):
        for row, (key, label) in enumerate(
            [
                ("p50_1conn_ms", "1 connection, p50 (ms, lower is better)"),
                ("rps_16conn", "16 connections, requests/s (higher is better)"),
            ]
        ):
            axis = axes[row][column]
            axis.barh(servers, figures[key], color=colours(servers))
            axis.invert_yaxis()
            axis.set_xlabel(label)
            for y, value in enumerate(figures[key]):
                axis.annotate(f" {value:,}", (value, y), va="center", fontsize=8)
            if row == 0:
                axis.set_title(model)
    figure.suptitle(f"One row of XGBoost over HTTP ({data['run']})", fontsize=10)
    return figure


def big_batches(plt: Any, data: dict[str, Any]) -> Any:
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    csv = data["csv"]
    names = ["numpy floor (in-process)", "tree before", "smserve over HTTP"]
    values = [csv["numpy_floor_ms"], csv["tree_before_ms"], csv["smserve_ms"]]
    left.barh(names, values, color=[FLOOR, PEER, OURS])
    left.invert_yaxis()
    left.set_xlabel("10,000 x 50 CSV -> CSV, ms (lower is better)")
    explain = data["explain"]
    runs = range(1, len(explain["plain_csv_ms"]) + 1)
    right.plot(runs, explain["plain_csv_ms"], "o-", color=PEER, label="plain score")
    right.plot(
        runs, explain["approximate_csv_ms"], "o-", color=OURS, label="+ approximate_contributions"
    )
    twice = [2 * v for v in explain["plain_csv_ms"]]
    right.plot(runs, twice, "--", color="#d62728", label="2x plain (target)")
    right.set_xlabel("run")
    right.set_ylabel("10,000 rows -> CSV, ms")
    right.set_ylim(bottom=0)
    right.legend(fontsize=8)
    return figure


def hostile(plt: Any, data: dict[str, Any]) -> Any:
    cases = data["cases"]
    limits = data["limits"]
    figure, axes = plt.subplots(1, 3, figsize=(12, 11), sharey=True)
    names = [case[0] for case in cases]
    for axis, index, limit, label in [
        (axes[0], 2, limits["time_ms"], "answer time, ms (log)"),
        (axes[1], 3, limits["worker_mb"], "worker RSS growth, MB"),
        (axes[2], 4, limits["nginx_mb"], "nginx RSS growth, MB"),
    ]:
        values = [max(case[index], 0.5) if index == 2 else case[index] for case in cases]
        axis.barh(names, values, color=OURS)
        axis.axvline(limit, color="#d62728", linestyle="--", label=f"limit {limit}")
        axis.set_xlabel(label)
        axis.legend(fontsize=8, loc="lower right")
    axes[0].set_xscale("log")
    axes[0].invert_yaxis()
    axes[0].tick_params(axis="y", labelsize=7)
    figure.suptitle(
        f"{len(cases)} hostile requests, each against its limits ({data['run']})", fontsize=10
    )
    return figure


def cold_start(plt: Any, data: dict[str, Any]) -> Any:
    figure, axis = plt.subplots(figsize=(8, 2.8))
    names = list(data["configs"])
    for y, name in enumerate(names):
        config = data["configs"][name]
        axis.scatter(config["runs_s"], [y] * len(config["runs_s"]), color=OURS, zorder=3)
        axis.barh(y, statistics.median(config["runs_s"]), color=OURS, alpha=0.3)
        axis.scatter([config["floor_s"]], [y], color=FLOOR, marker="|", s=300, zorder=3)
    axis.set_yticks(range(len(names)), names)
    axis.axvline(
        data["limit_s"], color="#d62728", linestyle="--", label=f"aim: {data['limit_s']} s"
    )
    axis.scatter([], [], color=FLOOR, marker="|", s=300, label="floor: bare http.server")
    axis.invert_yaxis()
    axis.set_xlabel("docker run to the first 200 on /ping, s (runs; bar = median)")
    axis.legend(fontsize=8)
    figure.suptitle("Cold start, 1 CPU, a 2,800-tree model in model.tar.gz", fontsize=10)
    return figure


def main() -> int:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "plots: needs matplotlib (pip install matplotlib into a side folder)", file=sys.stderr
        )
        return 2
    data = json.loads(DATA.read_text(encoding="utf-8"))
    OUT.mkdir(parents=True, exist_ok=True)
    for name, draw in [
        ("latency", latency),
        ("big-batches", big_batches),
        ("hostile", hostile),
        ("cold-start", cold_start),
    ]:
        figure = draw(plt, data[name.replace("-", "_")])
        figure.tight_layout()
        figure.savefig(OUT / f"{name}.png", dpi=80, metadata={"Software": None})
        plt.close(figure)
        print(f"plots: wrote {(OUT / f'{name}.png').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
