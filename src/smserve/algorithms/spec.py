"""What the rest of smserve knows of an algorithm, in one descriptor per algorithm.

The descriptors are read before numpy may be imported (``smserve.config`` takes its list of
names from them, and the CLI reads the settings before it caps the native thread pools), so
this module and every algorithm's descriptor module import nothing heavy: each field that needs
an algorithm's code is a function that imports that code when called. That also keeps a k-means
deployment from ever importing XGBoost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from smserve.algorithms.base import Algorithm
    from smserve.algorithms.footprint import Footprint
    from smserve.algorithms.heads import ModelFile
    from smserve.config import Settings


@dataclass(frozen=True, slots=True)
class DemoSpec:
    """``smserve serve --demo``'s model: ``train`` writes it into a directory from data that
    ships with scikit-learn; ``rows`` are that data's features (the sample request sends one)."""

    train: Callable[[Path], None]
    rows: Callable[[], np.ndarray]


@dataclass(frozen=True, slots=True)
class AlgorithmSpec:
    """One algorithm, as serving, scoring, training and the demo see it.

    ``detects``: whether these model files are this algorithm's, judged by what they hold
    (each file's name, size and first bytes, ``smserve.algorithms.heads``; the table asks in
    order, so a catch-all goes last). ``model_file``: the file name the built-in writes, for
    messages.
    ``load``: the Algorithm for a model directory. ``import_lean``: import the libraries a load
    needs, the cheapest way, before workers fork. ``fork_unsafe_modules``: modules whose import
    may have started threads that a fork would not carry over. ``trainer``: ``module:class``
    of its ``smserve train`` trainer (named, not imported: training sits above the algorithms).
    ``footprint``: the memory a load of these files takes (``smserve.algorithms.footprint``).
    """

    name: str
    title: str
    model_file: str
    detects: Callable[[Sequence[ModelFile]], bool]
    load: Callable[[Settings, Path], Algorithm]
    import_lean: Callable[[], None]
    fork_unsafe_modules: tuple[str, ...]
    footprint: Callable[[list[ModelFile], Settings], Footprint]
    trainer: str | None = None
    demo: DemoSpec | None = None


def nothing_to_import() -> None:
    """``import_lean`` for an algorithm whose libraries cost nothing worth preloading."""
