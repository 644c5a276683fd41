"""A fast predictor for XGBoost where it is faster, XGBoost's own where it is not.

For one row, XGBoost's ``inplace_predict`` spends most of its time outside the trees (argument
handling, a proxy DMatrix, thread set-up, per-call model views): 0.13-0.17 ms for the
benchmark model, ~1 ms for 1,000 trees of depth 8. ``FastPredictor`` walks the same trees over
flat node arrays in C (``_fast``, compiled when the package is built) with XGBoost's
own float32 arithmetic, so its answers are XGBoost's bit for bit.

Each member's ``FastSlot`` starts empty: XGBoost answers. ``start`` queues the member on one
background thread per process (never on the request path), which reads the trees
(``xgboost.fast_trees``), checks the predictor against XGBoost on probe rows
(``xgboost.fast_check``; any differing bit refuses it), measures from which batch size
XGBoost is faster (``xgboost.fast_choice``), logs the choice with its timings, and switches
the slot with one assignment: a request sees the old state or the new, never a mix. Bounded:
one build at a time, BUILD_DEADLINE_S each, models over MAX_FILE_BYTES skipped (the build
holds the model's UBJSON and 16 bytes per node). A member whose model was unloaded or
replaced (hot swap, multi-model eviction) before its turn is skipped. Nothing is compiled at
run time, so nothing is cached: a build costs well under a second for the benchmark model.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import xgboost as xgb

from smserve.algorithms.xgboost.fast_check import SPECIAL, first_disagreement, probe_rows
from smserve.algorithms.xgboost.fast_choice import Choice, choose
from smserve.algorithms.xgboost.fast_trees import ARGMAX, FlatTrees, NotCovered, flat_trees
from smserve.scipy_sparse import sparse as sp
from smserve.types import Features

logger = logging.getLogger(__name__)

BUILD_DEADLINE_S = 120.0
MAX_FILE_BYTES = 512 * 1024 * 1024

try:
    from smserve.algorithms.xgboost._fast import Forest

    AVAILABLE = True
except ImportError:  # built without a C compiler: XGBoost's own predictor only
    AVAILABLE = False


class FastPredictor:
    """``inplace_predict(features, predict_type=..., missing=nan)`` of one booster, for float32
    dense rows of the model's width or CSR; thread-safe (the forest is immutable)."""

    def __init__(self, trees: FlatTrees) -> None:
        self._forest = Forest(
            trees.nodes, trees.starts, trees.groups, trees.base, trees.n_features, trees.transform
        )
        self._groups = int(trees.base.size)
        self._labels = trees.transform == ARGMAX

    def predict(self, features: Features, margin: bool) -> np.ndarray:
        """Raises ValueError for input it cannot take (the algorithm's checks come first)."""
        n_rows = int(features.shape[0])
        width = 1 if self._labels and not margin else self._groups
        out = np.empty((n_rows, width) if width > 1 else n_rows, dtype=np.float32)
        if isinstance(features, np.ndarray):
            self._forest.predict(np.ascontiguousarray(features, np.float32), out, margin)
        else:
            self._predict_csr(features, out, margin)
        return out

    def _predict_csr(self, features: sp.csr_matrix, out: np.ndarray, margin: bool) -> None:
        index = np.int64 if features.indices.dtype == np.int64 else np.int32
        parts = (
            np.ascontiguousarray(features.indptr, index),
            np.ascontiguousarray(features.indices, index),
            np.ascontiguousarray(features.data, np.float32),
        )
        self._forest.predict_csr(*parts, int(features.shape[0]), out, margin)


@dataclass(frozen=True, slots=True)
class Serving:
    predictor: FastPredictor
    max_rows: int


class FastSlot:
    """A member's fast predictor: None until built, checked and measured (XGBoost answers),
    then set once, by one assignment."""

    __slots__ = ("serving", "__weakref__")

    def __init__(self) -> None:
        self.serving: Serving | None = None

    def for_rows(self, n_rows: int) -> FastPredictor | None:
        serving = self.serving  # one read: the old state or the new, never a mix
        return serving.predictor if serving is not None and n_rows <= serving.max_rows else None


class Source(Protocol):
    """What a build needs of a member: its booster, trees and file, and its slot."""

    @property
    def booster(self) -> xgb.Booster: ...
    @property
    def iteration_range(self) -> tuple[int, int]: ...
    @property
    def path(self) -> Path: ...
    @property
    def fast(self) -> FastSlot | None: ...


Reference = Callable[[Any, Features, bool], np.ndarray]  # (member, features, margin)


def wanted(mode: str, device: str) -> bool:
    """Whether to build fast predictors: SMSERVE_FAST_PREDICTOR=auto, on cpu, if built in."""
    if mode == "off" or device != "cpu":
        return False
    if not AVAILABLE:
        logger.info("the fast predictor was not compiled into this install; XGBoost answers")
    return AVAILABLE


def start(member: Source, reference: Reference) -> None:
    """Queue ``member`` for a build; ``reference`` predicts with XGBoost's own path. The
    queue holds a weak reference only, so an unloaded model is not kept alive."""
    _builder().put((weakref.ref(member), reference, time.monotonic()))


Job = tuple[weakref.ref[Any], Reference, float]  # (member, reference, when queued)
_builders: dict[int, queue.SimpleQueue[Job]] = {}  # per process id: a fork has its own
_builders_lock = threading.Lock()


def _builder() -> queue.SimpleQueue[Job]:
    with _builders_lock:
        jobs = _builders.get(os.getpid())
        if jobs is None:
            jobs = _builders[os.getpid()] = queue.SimpleQueue()
            threading.Thread(target=_run, args=(jobs,), name="smserve-fast", daemon=True).start()
        return jobs


def _run(jobs: queue.SimpleQueue[Job]) -> None:
    while True:
        member_ref, reference, queued = jobs.get()
        member = member_ref()
        if member is None:
            continue  # unloaded before its turn
        try:
            build(member, reference, queued)
        except Exception:  # a build failure only means XGBoost keeps answering
            logger.exception("%s: fast predictor not built; XGBoost answers", member.path.name)
        del member


def build(member: Source, reference: Reference, since: float | None = None) -> Choice | None:
    """Build, check, measure and switch ``member``'s slot; returns the choice (None when
    the fast predictor is not used). ``since``: when the model was loaded, for the log."""
    since = time.monotonic() if since is None else since
    deadline = since + BUILD_DEADLINE_S
    name, slot = member.path.name, member.fast
    built = _checked(member, reference, name) if slot is not None else None
    if built is None or slot is None:
        return None
    fast = built.fast
    rows = _measure_rows(built.probe_rows)
    xgboost = lambda x: reference(member, x, False)  # noqa: E731
    choice = choose(lambda x: fast.predict(x, False), xgboost, rows, deadline)
    _switch(slot, fast, choice, name, since)
    return choice if choice.max_rows else None


@dataclass(frozen=True, slots=True)
class _Built:
    fast: FastPredictor
    probe_rows: np.ndarray


def _checked(member: Source, reference: Reference, name: str) -> _Built | None:
    if _file_size(member.path) > MAX_FILE_BYTES:
        logger.info("%s: over %d bytes; XGBoost answers", name, MAX_FILE_BYTES)
        return None
    try:
        trees = flat_trees(member.booster, member.iteration_range)
        fast = FastPredictor(trees)
    except (NotCovered, ValueError) as exc:
        logger.info("%s: no fast predictor, %s; XGBoost answers", name, exc)
        return None
    rows = probe_rows(trees.thresholds)
    differs = first_disagreement(fast.predict, lambda x, m: reference(member, x, m), rows)
    if differs is not None:
        logger.warning("%s: fast predictor refused, it differs from XGBoost on %s", name, differs)
        return None
    return _Built(fast, rows)


def _measure_rows(rows: np.ndarray) -> np.ndarray:
    """Probe rows as served rows look: without the rows of infinities, zeros or NaN."""
    return np.ascontiguousarray(rows[len(SPECIAL) :])


def _switch(slot: FastSlot, fast: FastPredictor, choice: Choice, name: str, since: float) -> None:
    elapsed = time.monotonic() - since
    if not choice.max_rows:
        logger.info("%s: XGBoost is faster at every size measured (%s)", name, choice.explained())
        return
    slot.serving = Serving(fast, choice.max_rows)
    logger.info(
        "%s: fast predictor serves batches of 1-%d rows, XGBoost larger ones; ready %.2f s "
        "after load (per call: %s)",
        name,
        choice.max_rows,
        elapsed,
        choice.explained(),
    )


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
