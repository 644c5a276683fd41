"""The table of algorithms: every list of algorithm names in smserve derives from ``ALGORITHMS``.

Adding an algorithm is one module holding its ``AlgorithmSpec`` (see ``smserve.algorithms.spec``)
and one line here. The order is the order in which model files are matched to an algorithm, so
the catch-all (XGBoost, whose loader tries every format XGBoost writes) is last. This module is
imported by ``smserve.config``, so it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from smserve.algorithms.kmeans import KMEANS
from smserve.algorithms.spec import AlgorithmSpec
from smserve.algorithms.xgboost import XGBOOST
from smserve.errors import ConfigError

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
