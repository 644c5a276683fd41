"""A third algorithm, defined outside the package, whose files are also called
``model_algo-1``: SageMaker's PCA (an NDArray dict of ``s``, ``v`` and ``mean``). It is this
one package plus its line in a table the test supplies; k-means is not touched. It has no
trainer and no demo."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from smserve.algorithms.base import Algorithm
from smserve.algorithms.confinement import open_file
from smserve.algorithms.footprint import KMEANS as PER_BYTE
from smserve.algorithms.footprint import Footprint
from smserve.algorithms.heads import ModelFile
from smserve.algorithms.ndarray_head import read_list_head
from smserve.algorithms.spec import AlgorithmSpec, nothing_to_import
from smserve.config import Settings

ARRAYS = ("s", "v", "mean")


def _is_pca(file: ModelFile) -> bool:
    if file.name != "model_algo-1" or file.path is None:
        return False
    with open_file(file.path) as stream:
        head = read_list_head(stream)
    return head is not None and head.complete and set(head.names) == set(ARRAYS)


def _detects(files: Sequence[ModelFile]) -> bool:
    return any(_is_pca(file) for file in files)


def _load(settings: Settings, model_dir: Path) -> Algorithm:
    from tests.unit.algorithms.pca.algorithm import PCAModel

    return PCAModel.load(model_dir)


def _footprint(files: list[ModelFile], settings: Settings) -> Footprint:
    return PER_BYTE.of(sum(file.size for file in files))


PCA = AlgorithmSpec(
    name="pca",
    title="PCA",
    model_file="model_algo-1",
    detects=_detects,
    load=_load,
    import_lean=nothing_to_import,
    fork_unsafe_modules=(),
    footprint=_footprint,
)
