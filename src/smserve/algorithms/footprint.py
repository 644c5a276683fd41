"""What a model will cost a worker's memory, estimated from its files before any is parsed,
so that a multi-model load past the budget is refused (507) with nothing loaded, before the
kernel's OOM killer would act.

Two figures per model: ``resident``, what the worker holds while the model is loaded, and
``peak``, the most it holds while loading it (parsing allocates far more than the model
keeps; ``ModelLoader`` hands the difference back to the kernel after each load, see
``resources.return_freed_memory``). Each is a calibrated rate per byte of the file that is
parsed, by format, plus a fixed part per model, measured with
``bench/inprocess/model_memory.py`` (the table and the method are in docs/design/multi-model.md):

* XGBoost: the booster's trees cost about the same whatever the file's format, but JSON takes
  more bytes per tree than UBJSON, and parsing JSON briefly needs about ten times the file.
  With more than one XGBoost thread per worker, a booster of at most SINGLE_COPY_MAX_BYTES
  is kept twice (``xgboost.model.configure``).
* k-means: the centroids as float64 (twice a float32 file), read once whole; a worker's
  first ``.skops`` model also imports scikit-learn.

A file's format is told from its first bytes (``smserve.algorithms.heads``, which also reads
the files inside a model archive as it streams past). Nothing here imports XGBoost.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from smserve.algorithms.heads import ModelFile, model_files
from smserve.algorithms.kmeans.claims import SKOPS_SUFFIX, is_kmeans_file
from smserve.config import Settings

__all__ = ["Footprint", "ModelFile", "kmeans_footprint", "model_files", "xgboost_footprint"]

MIB = 1 << 20
SINGLE_COPY_MAX_BYTES = 128 * MIB  # a larger booster is never copied (xgboost.model)


@dataclass(frozen=True, slots=True)
class Footprint:
    """Bytes a loaded model holds (``resident``) and holds at most while loading (``peak``)."""

    resident: int
    peak: int

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint(self.resident + other.resident, self.peak + other.peak)


@dataclass(frozen=True, slots=True)
class Rate:
    """Bytes held per byte of a model file, loaded and at the peak of loading."""

    resident: float
    peak: float

    def of(self, size: int, copies: int = 1) -> Footprint:
        resident = int(self.resident * size * copies)
        return Footprint(resident, resident + int((self.peak - self.resident) * size))


# Calibrated with bench/inprocess/model_memory.py (docs/design/multi-model.md), rounded up.
XGBOOST_JSON = Rate(resident=1.8, peak=14.0)
XGBOOST_BINARY = Rate(resident=2.4, peak=5.0)  # UBJSON, an opted-in pickle, old binary
KMEANS = Rate(resident=2.2, peak=4.5)
PER_MODEL = Footprint(resident=1 * MIB, peak=2 * MIB)  # the service, its outputs, buffers
# A worker's first .skops model imports scikit-learn and skops (measured: 157 MiB); the
# worker estimating the load pays it when it has not imported them yet.
SKOPS_LIBRARIES = Footprint(resident=160 * MIB, peak=160 * MIB)


def xgboost_footprint(files: list[ModelFile], settings: Settings) -> Footprint:
    threads = max(1, settings.cpu_count // settings.workers)  # xgboost.model.threads_per_worker
    total = Footprint(0, 0)
    for file in files if settings.ensemble else files[:1]:
        copies = 2 if threads > 1 and file.size <= SINGLE_COPY_MAX_BYTES else 1
        rate = XGBOOST_JSON if file.is_json else XGBOOST_BINARY
        total += rate.of(file.size, copies)
    return total


def kmeans_footprint(files: list[ModelFile], settings: Settings) -> Footprint:
    artifacts = [f for f in files if is_kmeans_file(f)]
    cost = KMEANS.of(max((f.size for f in artifacts), default=0))
    skops = any(f.name.lower().endswith(SKOPS_SUFFIX) for f in artifacts)
    return cost + SKOPS_LIBRARIES if skops and "sklearn" not in sys.modules else cost
