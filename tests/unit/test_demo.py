"""Demo models: trained into the cache once, loadable, and reused on the next start."""

from __future__ import annotations

from pathlib import Path

import pytest

from smserve import demo
from smserve.algorithms.loading import load_algorithm
from smserve.config import Settings


@pytest.mark.parametrize(("kind", "n_features"), [("kmeans", 4), ("xgboost", 30)])
def test_demo_model_is_trained_once_and_loads(tmp_path: Path, kind: str, n_features: int) -> None:
    settings = Settings(cache_dir=tmp_path)
    model_dir = demo.model_dir(kind, settings)
    assert model_dir == tmp_path / f"demo-{kind}"

    demo.prepare(kind, settings)
    files = {path.name: path.stat().st_mtime_ns for path in model_dir.iterdir()}
    demo.prepare(kind, settings)

    assert {path.name: path.stat().st_mtime_ns for path in model_dir.iterdir()} == files
    assert [p.name for p in tmp_path.iterdir()] == [model_dir.name]  # no staging left behind
    algorithm = load_algorithm(settings.replace(model_dir=model_dir))
    assert (algorithm.name, algorithm.n_features) == (kind, n_features)


def test_sample_request_sends_one_row_of_the_right_width() -> None:
    command = demo.sample_request("xgboost", 8080)
    assert command.startswith("curl -s -X POST http://localhost:8080/invocations")
    row = command.rsplit("--data ", 1)[1].strip("'")
    assert len(row.split(",")) == 30
