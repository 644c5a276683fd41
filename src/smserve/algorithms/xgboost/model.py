"""Loading XGBoost boosters from model files and reading what they record (objective, classes,
features, best iteration); choosing the prediction device and thread count. No prediction here.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import xgboost as xgb

from smserve.algorithms.confinement import file_size
from smserve.algorithms.model_files import read_model_file
from smserve.algorithms.xgboost.approximate import LazyApproximation, spares_by_one_thread
from smserve.algorithms.xgboost.direct import DirectPredictor, same_predictions
from smserve.algorithms.xgboost.fast import FastSlot
from smserve.algorithms.xgboost.legacy import model_document
from smserve.algorithms.xgboost.validation import validate
from smserve.errors import ModelLoadError

logger = logging.getLogger(__name__)

# Objectives served with the plain ``score`` output (count:* other than poisson is not a
# built-in XGBoost objective; anything custom has no defined output).
SUPPORTED_PREFIXES = ("reg:", "binary:", "multi:", "survival:", "rank:")
SUPPORTED_EXACT = ("count:poisson",)
_JSON_START = re.compile(rb"\s*\{\s*[\"}]")  # UBJSON objects start with {, then a length
_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\s*\S+:\d+:\s*")  # "[12:00:00] src/file.cc:409: "
# XGBoost's CPU predictor hands rows to its threads in blocks of 64: a batch of at most one
# block keeps one thread busy whatever nthread says, and waking the others only costs time
# (and on a busy machine, waiting for a descheduled one). Such batches go to a copy of the
# booster with nthread=1, unless the model file is so large that a second copy would matter.
SMALL_BATCH_ROWS = 64
SINGLE_COPY_MAX_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What a booster's saved configuration says about its outputs."""

    objective: str
    num_class: int  # 0 unless multi:*
    num_target: int
    num_features: int | None  # None when the model does not record it

    @property
    def is_multiclass(self) -> bool:
        return self.objective.startswith("multi:")


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Member:
    """One loaded booster and the trees to predict with. ``configure`` adds, on cpu,
    ``single``: a copy of the booster with nthread=1 for batches of at most SMALL_BATCH_ROWS
    rows (None with one thread anyway or a model file over SINGLE_COPY_MAX_BYTES),
    ``spare``: the booster for a prediction that spares one of the worker's CPUs (``single``
    with a share of two; None otherwise: one CPU has none to spare, and for more, one thread
    fewer would take yet another copy), ``direct``: prediction through the C API (see
    ``xgboost.direct``), ``approximation``: approximate contributions as one prediction
    (see ``xgboost.approximate``); and ``fast``: the fast predictor, once built in the
    background (see ``xgboost.fast``). On cuda, ``on_cpu``: a copy of the booster on cpu for
    approximate contributions, which XGBoost's GPU predictor does not implement (it raises
    "Approximated contribution is not implemented in the GPU predictor", seen on an H200).
    Weakly referenced by that build's queue."""

    path: Path
    booster: xgb.Booster
    iteration_range: tuple[int, int]
    single: xgb.Booster | None = None
    spare: xgb.Booster | None = None
    direct: DirectPredictor | None = None
    approximation: LazyApproximation | None = None
    fast: FastSlot | None = None
    on_cpu: xgb.Booster | None = None

    def booster_for(self, n_rows: int, spare_cpu: bool = False) -> xgb.Booster:
        """The booster for a batch of ``n_rows`` rows, sparing a CPU if asked and possible."""
        if self.single is not None and n_rows <= SMALL_BATCH_ROWS:
            return self.single
        if spare_cpu and self.spare is not None:
            return self.spare
        return self.booster


def load_member(path: Path, allow_pickle: bool) -> Member:
    """Load one model file: Booster.save_model JSON, UBJSON or legacy binary (0.90-2.0), or a
    pickled Booster of any generation (see ``xgboost.legacy``)."""
    document = model_document(path, read_model_file(path), allow_pickle)
    booster = _booster_from_document(path, document.data)
    return Member(path, booster, iteration_range(booster))


def _booster_from_document(path: Path, data: bytes) -> xgb.Booster:
    """The booster of a JSON or UBJSON model document (``data``, from the file ``path``): every
    model file, whatever its format, reaches XGBoost through here, checked before XGBoost
    parses it: complete and valid (``validation``), and handed over as ``validation`` says."""
    data = validate(path, data)
    booster = xgb.Booster()
    try:
        # Given bytes, XGBoost tells JSON from UBJSON by content; given a path it goes by the
        # extension and warns for extension-less names such as xgboost-model.
        _load_logging_warnings(booster, path, data)
    except (xgb.core.XGBoostError, ValueError) as exc:  # ValueError: undecodable messages
        raise ModelLoadError(
            f"{path} is not an XGBoost model (JSON, UBJSON or legacy binary from "
            "Booster.save_model, or a pickled Booster). Every file in the model directory is "
            f"loaded as a model: remove this one. XGBoost said: {_first_line(exc)}"
        ) from exc
    return booster


def _load_logging_warnings(booster: xgb.Booster, path: Path, data: bytes) -> None:
    """``load_model``, with what XGBoost warns while loading (for one: "Found JSON model saved
    before XGBoost 1.6", a 1.3-1.5 pickle's document) logged once, naming the file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        booster.load_model(bytearray(data))
    for warning in caught:
        text = str(warning.message).strip().splitlines() or [""]
        logger.warning("%s: XGBoost warned on loading: %s", path.name, _LOG_PREFIX.sub("", text[0]))


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return _LOG_PREFIX.sub("", lines[0])


def iteration_range(booster: xgb.Booster) -> tuple[int, int]:
    """(0, best_iteration + 1) when early stopping recorded one, else (0, 0): every tree."""
    best = booster.attr("best_iteration")
    return (0, int(best) + 1) if best is not None else (0, 0)


def read_info(member: Member) -> ModelInfo:
    """The objective and shapes recorded in the booster's configuration."""
    learner = json.loads(member.booster.save_config())["learner"]
    params = learner["learner_model_param"]
    num_features = member.booster.num_features()
    return ModelInfo(
        objective=learner["objective"]["name"],
        num_class=int(params.get("num_class", 0)),
        num_target=int(params.get("num_target", 1)),
        num_features=num_features or None,
    )


def check_supported(info: ModelInfo, path: Path) -> None:
    objective = info.objective
    if not (objective.startswith(SUPPORTED_PREFIXES) or objective in SUPPORTED_EXACT):
        raise ModelLoadError(f"{path}: objective {objective!r} is not supported for serving")


def threads_per_worker(cpu_count: int, workers: int) -> int:
    """CPU threads per booster so that all workers together use each of the container's
    ``cpu_count`` CPUs once."""
    return max(1, cpu_count // workers)


def choose_device(requested: str, probe: xgb.Booster) -> str:
    """``cuda`` or ``cpu`` for ``requested`` in auto|cpu|cuda; raises ModelLoadError when
    cuda is requested but XGBoost lacks CUDA or sees no GPU. Leaves ``probe`` on cpu."""
    if requested == "cpu":
        return "cpu"
    available, reason = _cuda_available(probe)
    if requested == "cuda" and not available:
        raise ModelLoadError(f"SMSERVE_XGBOOST_DEVICE=cuda but {reason}")
    if not available:
        logger.info("SMSERVE_XGBOOST_DEVICE=auto: using cpu, %s", reason)
    return "cuda" if available else "cpu"


def _cuda_available(probe: xgb.Booster) -> tuple[bool, str]:
    if not xgb.build_info().get("USE_CUDA", False):
        return False, "this XGBoost build has no CUDA support"
    # XGBoost falls back to cpu (with a warning) when it sees no GPU, and its saved config
    # then says so: the cheapest probe that asks XGBoost itself.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.set_param({"device": "cuda"})
        device = json.loads(probe.save_config())["learner"]["generic_param"]["device"]
        probe.set_param({"device": "cpu"})
    return str(device).startswith("cuda"), "XGBoost sees no GPU"


def configure(member: Member, device: str, nthread: int, n_features: int | None) -> Member:
    """Set the prediction device and thread count once, at load (not per request); on cpu,
    add the single-threaded copy for small batches and the direct predictor."""
    member.booster.set_param({"device": device, "nthread": nthread})
    if device != "cpu":
        on_cpu = _copy_on_cpu(member.booster, nthread)
        approximation = LazyApproximation(on_cpu, member.iteration_range, nthread)
        return replace(member, on_cpu=on_cpu, approximation=approximation)
    single = _single_threaded(member, n_features) if nthread > 1 else None
    boosters = [member.booster] if single is None else [member.booster, single]
    direct = DirectPredictor.create(boosters, member.iteration_range, n_features)
    approximation = LazyApproximation(member.booster, member.iteration_range, nthread)
    spare = single if spares_by_one_thread(nthread) else None
    return replace(member, single=single, spare=spare, direct=direct, approximation=approximation)


def _copy_on_cpu(booster: xgb.Booster, nthread: int) -> xgb.Booster:
    copy = booster.copy()
    copy.set_param({"device": "cpu", "nthread": nthread})
    return copy


def _single_threaded(member: Member, n_features: int | None) -> xgb.Booster | None:
    """A copy of the booster (the model's memory twice) with nthread=1, used only if it
    predicts bit for bit what the booster does on probe rows."""
    if not n_features or _file_size(member.path) > SINGLE_COPY_MAX_BYTES:
        return None
    single = member.booster.copy()
    single.set_param({"nthread": 1})
    if same_predictions(member.booster, single, member.iteration_range, n_features):
        return single
    logger.warning("%s: a single-threaded copy predicts differently; not used", member.path)
    return None


def _file_size(path: Path) -> int:
    try:
        return file_size(path)
    except OSError:  # gone since it was loaded: the size is unknown, so no copy
        return SINGLE_COPY_MAX_BYTES + 1
