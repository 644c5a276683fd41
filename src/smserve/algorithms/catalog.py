"""The table of algorithms: every list of algorithm names in smserve derives from ``ALGORITHMS``.

Adding an algorithm is one module holding its ``AlgorithmSpec`` (see ``smserve.algorithms.spec``)
and one line here. The order is the order in which model files are matched to an algorithm, so
the catch-all (XGBoost, whose loader tries every format XGBoost writes) is last. It imports nothing
heavy (each descriptor imports its algorithm's code only when called), and nothing below it
imports it: ``smserve.config`` takes an algorithm's name as text, checked here when used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smserve.algorithms.kmeans import KMEANS
from smserve.algorithms.spec import AlgorithmSpec
from smserve.algorithms.xgboost import XGBOOST
from smserve.errors import ConfigError

if TYPE_CHECKING:
    from smserve.algorithms.footprint import Footprint
    from smserve.config import Settings

ALGORITHMS: tuple[AlgorithmSpec, ...] = (KMEANS, XGBOOST)
NAMES = tuple(spec.name for spec in ALGORITHMS)
# What ``smserve train`` and ``smserve serve --demo`` use when no algorithm is named.
DEFAULT = XGBOOST


def spec_for(name: str) -> AlgorithmSpec:
    """The algorithm called ``name`` (any case); ConfigError names the choices otherwise."""
    for spec in ALGORITHMS:
        if spec.name == name.lower():
            return spec
    raise ConfigError(f"unknown algorithm {name!r}: use one of {', '.join(NAMES)}")


def detected(files: Sequence[Path]) -> AlgorithmSpec:
    """The first algorithm in the table that claims ``files``."""
    return next(spec for spec in ALGORITHMS if spec.detects(files))


def chosen(name: str | None, files: Sequence[Path]) -> AlgorithmSpec:
    """The algorithm ``name`` when set (``SMSERVE_ALGORITHM``), else the one ``files`` show."""
    return detected(files) if name is None else spec_for(name)


def expected_files() -> str:
    """The model files smserve looks for, for a message; the default algorithm's first."""
    specs = (DEFAULT, *(spec for spec in ALGORITHMS if spec is not DEFAULT))
    return " or ".join(f"{spec.model_file} ({spec.title})" for spec in specs)


def estimate(settings: Settings, model_dir: Path) -> Footprint:
    """The footprint of the model in ``model_dir`` (read through ``confinement``), by the
    algorithm its files show; raises ModelLoadError when its files cannot be listed or read."""
    from smserve.algorithms.footprint import PER_MODEL, model_files

    files = model_files(model_dir)
    spec = chosen(settings.algorithm, [Path(f.name) for f in files])
    return PER_MODEL + spec.footprint(files, settings)
