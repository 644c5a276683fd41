"""The table of algorithms: every list of algorithm names in smserve derives from ``ALGORITHMS``.

Adding an algorithm is one module holding its ``AlgorithmSpec`` (see ``smserve.algorithms.spec``)
and one line here. The order is the order in which model files are offered to each algorithm,
which claims them by what they hold (``AlgorithmSpec.detects``), so the catch-all (XGBoost,
whose loader tries every format XGBoost writes, and which leaves alone the formats it never
writes) is last. Files that none claims are refused, saying what they look like
(``smserve.algorithms.lookalikes``). Every function reads ``ALGORITHMS`` when called, so a test
may put its own table there. It imports nothing heavy (each descriptor imports its algorithm's
code only when called), and nothing below it imports it: ``smserve.config`` takes an
algorithm's name as text, checked here when used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smserve.algorithms.kmeans import KMEANS
from smserve.algorithms.spec import AlgorithmSpec, DemoSpec
from smserve.algorithms.xgboost import XGBOOST
from smserve.errors import ConfigError, ModelLoadError

if TYPE_CHECKING:
    from smserve.algorithms.footprint import Footprint
    from smserve.algorithms.heads import ModelFile
    from smserve.config import Settings

ALGORITHMS: tuple[AlgorithmSpec, ...] = (KMEANS, XGBOOST)
NAMES = tuple(spec.name for spec in ALGORITHMS)  # the shipped table's; names() is the current
# What ``smserve train`` and ``smserve serve --demo`` use when no algorithm is named.
DEFAULT = XGBOOST


def spec_for(name: str) -> AlgorithmSpec:
    """The algorithm called ``name`` (any case); ConfigError names the choices otherwise."""
    for spec in ALGORITHMS:
        if spec.name == name.lower():
            return spec
    raise ConfigError(f"unknown algorithm {name!r}: use one of {', '.join(names())}")


def names() -> tuple[str, ...]:
    """The names of the algorithms of the table, in its order."""
    return tuple(spec.name for spec in ALGORITHMS)


def trainable() -> tuple[str, ...]:
    """The algorithms ``smserve train`` trains: those with a trainer."""
    return tuple(spec.name for spec in ALGORITHMS if spec.trainer)


def with_demo() -> tuple[str, ...]:
    """The kinds ``smserve serve --demo`` serves: the algorithms with a demo."""
    return tuple(spec.name for spec in ALGORITHMS if spec.demo)


def trainer_of(name: str) -> str:
    """The ``module:class`` of the trainer of the algorithm ``name``; ConfigError for an
    unknown algorithm or one without a trainer."""
    trainer = spec_for(name).trainer
    if trainer is None:
        raise ConfigError(
            f"algorithm {name!r} has no trainer: train one of {', '.join(trainable())}"
        )
    return trainer


def demo_of(name: str) -> DemoSpec:
    """The demo of the algorithm ``name``; ConfigError for an unknown one or one without."""
    demo = spec_for(name).demo
    if demo is None:
        raise ConfigError(f"algorithm {name!r} has no demo: use one of {', '.join(with_demo())}")
    return demo


def detected(files: Sequence[ModelFile]) -> AlgorithmSpec:
    """The first algorithm in the table that claims ``files``; ModelLoadError saying what they
    look like when none does."""
    claiming = _claiming(files)
    if claiming is None:
        from smserve.algorithms.lookalikes import unclaimed

        raise ModelLoadError(unclaimed(files, served()))
    return claiming


def _claiming(files: Sequence[ModelFile]) -> AlgorithmSpec | None:
    return next((spec for spec in ALGORITHMS if spec.detects(files)), None)


def chosen(name: str | None, files: Sequence[ModelFile]) -> AlgorithmSpec:
    """The algorithm ``name`` when set (``SMSERVE_ALGORITHM``), else the one ``files`` show."""
    return detected(files) if name is None else spec_for(name)


def served() -> str:
    """The algorithms served, for a message: "k-means and XGBoost"."""
    titles = [spec.title for spec in ALGORITHMS]
    return " and ".join(filter(None, (", ".join(titles[:-1]), titles[-1])))


def expected_files() -> str:
    """The model files smserve looks for, for a message; the default algorithm's first."""
    specs = (DEFAULT, *(spec for spec in ALGORITHMS if spec is not DEFAULT))
    return " or ".join(f"{spec.model_file} ({spec.title})" for spec in specs)


def estimate(settings: Settings, model_dir: Path) -> Footprint:
    """The footprint of the model in ``model_dir`` (read through ``confinement``), by the
    algorithm its files show (files none claims cost the fixed part alone: their load refuses
    them, saying what they look like); raises ModelLoadError when its files cannot be listed
    or read."""
    from smserve.algorithms.footprint import PER_MODEL
    from smserve.algorithms.heads import model_files

    files = model_files(model_dir)
    spec = _claiming(files) if settings.algorithm is None else spec_for(settings.algorithm)
    return PER_MODEL if spec is None else PER_MODEL + spec.footprint(files, settings)
