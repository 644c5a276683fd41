"""The table of algorithms: every name list derives from it, each entry's parts fit together,
and an unknown name is a clear error wherever a name is taken (config, train, score, demo)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from smserve import demo
from smserve.algorithms import catalog
from smserve.algorithms.heads import described
from smserve.algorithms.loading import load_algorithm
from smserve.algorithms.model_files import candidate_files
from smserve.algorithms.ndarray import write_ndarray_file
from smserve.cli import main
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.scoring import worker


def test_every_name_list_is_the_table() -> None:
    assert catalog.NAMES == tuple(spec.name for spec in catalog.ALGORITHMS)
    assert catalog.DEFAULT in catalog.ALGORITHMS


TRAINED = [spec for spec in catalog.ALGORITHMS if spec.trainer]


@pytest.mark.parametrize("spec", TRAINED, ids=lambda spec: spec.name)
def test_each_entry_names_a_trainer_of_its_own_name(spec: catalog.AlgorithmSpec) -> None:
    module, _, attribute = catalog.trainer_of(spec.name).partition(":")
    trainer = getattr(importlib.import_module(module), attribute)()
    assert trainer.name == spec.name


def built_in_file(directory: Path, spec: catalog.AlgorithmSpec) -> None:
    """The file ``spec``'s built-in writes: k-means' centroids, XGBoost's JSON (a stub)."""
    if spec.name == "kmeans":
        write_ndarray_file(directory / spec.model_file, np.ones((2, 3), np.float32))
    else:
        (directory / spec.model_file).write_bytes(b"{}")


@pytest.mark.parametrize("spec", catalog.ALGORITHMS, ids=lambda spec: spec.name)
def test_each_entry_claims_the_file_its_built_in_writes(
    tmp_path: Path, spec: catalog.AlgorithmSpec
) -> None:
    built_in_file(tmp_path, spec)
    assert catalog.detected(described(candidate_files(tmp_path))) is spec


def test_names_are_matched_in_any_case_and_unknown_ones_name_the_choices() -> None:
    assert catalog.spec_for("KMeans") is catalog.spec_for("kmeans")
    with pytest.raises(ConfigError, match="unknown algorithm 'forest': use one of kmeans, xgb"):
        catalog.spec_for("forest")


def test_a_named_algorithm_wins_over_the_files(tmp_path: Path) -> None:
    write_ndarray_file(tmp_path / "model_algo-1", np.ones((2, 3), dtype=np.float32))
    files = described(candidate_files(tmp_path))
    assert catalog.chosen(None, files).name == "kmeans"
    assert catalog.chosen("xgboost", files).name == "xgboost"


def test_serving_refuses_an_unknown_algorithm(tmp_path: Path) -> None:
    # config takes the name as text (it imports nothing of the algorithms); the table checks it
    assert Settings.from_env({"SMSERVE_ALGORITHM": " KMeans "}).algorithm == "kmeans"
    write_ndarray_file(tmp_path / "model_algo-1", np.ones((2, 3), dtype=np.float32))
    settings = Settings.from_env({"SMSERVE_ALGORITHM": "forest"})
    with pytest.raises(ConfigError, match="unknown algorithm 'forest': use one of kmeans"):
        load_algorithm(settings, tmp_path)


def test_score_refuses_an_unknown_algorithm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SMSERVE_ALGORITHM", "forest")
    (tmp_path / "in.csv").write_text("1,2\n")
    assert main(["score", str(tmp_path / "in.csv"), "--output", str(tmp_path / "out")]) == 2
    assert "unknown algorithm 'forest': use one of kmeans" in capsys.readouterr().err


def test_score_workers_refuse_an_unknown_algorithm_set_past_the_config() -> None:
    with pytest.raises(ConfigError, match="unknown algorithm 'forest'"):
        worker.preload(Settings(algorithm="forest"))


def test_demo_refuses_an_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown algorithm 'forest'"):
        demo.prepare("forest", Settings(cache_dir=tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_the_table_and_config_import_no_algorithm_code() -> None:
    code = (
        "import smserve.config, smserve.cli, sys; "
        "print(sorted({'numpy', 'xgboost'} & set(sys.modules)))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
