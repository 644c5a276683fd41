"""Prediction through XGBoost's C API, for the per-request cost of small batches.

For one row, ``Booster.inplace_predict`` costs several times what XGBoost spends walking the
trees: in Python it writes the argument JSON, tries a dozen input kinds (pandas, arrow,
polars, cudf, ...) and builds the output through ctypes helpers; in C++ it makes a new proxy
DMatrix per call, whose context reads the cgroup CPU quota from ``/sys`` each time.
``DirectPredictor`` makes the same C calls (``XGBoosterPredictFromDense`` and
``XGBoosterPredictFromCSR``, public and documented) for the inputs the decoders produce
(float32 C-contiguous 2-D arrays, float32 CSR): the argument JSON is written once at load,
each array interface is one bytes format, and one proxy DMatrix is kept per thread (the C API
takes one; a proxy holds only the current call's arrays, so calls on one thread may share
it, and XGBoost documents inplace prediction as thread-safe).

It reaches the library through ``xgboost.core`` names that are not public (``_LIB``,
``_check_call``, ``_ProxyDMatrix``). ``DirectPredictor.create`` returns None when they are
missing or when, on probe rows, dense or sparse, a result differs from ``inplace_predict`` by
a single bit; the algorithm then calls ``inplace_predict``.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import xgboost as xgb

from smserve.scipy_sparse import sparse as sp
from smserve.types import Features

logger = logging.getLogger(__name__)

INPLACE_UNSUPPORTED = "Inplace predict is not supported"  # gblinear's XGBoostError
PROBE_CELLS = 1 << 18  # values per probe batch at most (1 MiB of float32)
_INTERFACE = b'{"data": [%d, false], "shape": [%s], "strides": null, "typestr": "%s", "version": 3}'

try:
    from xgboost.core import _LIB, _check_call, _ProxyDMatrix

    _AVAILABLE = True
except ImportError:  # another XGBoost layout: inplace_predict only
    _AVAILABLE = False


class DirectPredictor:
    """``booster.inplace_predict(features, iteration_range=..., predict_type=..., missing=nan,
    validate_features=False)`` for float32 features: C-contiguous 2-D arrays or CSR."""

    def __init__(self, iteration_range: tuple[int, int]) -> None:
        self._configs = {margin: _config(iteration_range, margin) for margin in (False, True)}
        self._proxies = threading.local()

    @classmethod
    def create(
        cls,
        boosters: Sequence[xgb.Booster],
        iteration_range: tuple[int, int],
        n_features: int | None,
    ) -> DirectPredictor | None:
        """A predictor that agrees with ``inplace_predict`` of each of ``boosters`` on probe
        rows, else None."""
        if not _AVAILABLE or not n_features:
            return None
        predictor = cls(iteration_range)
        try:
            agrees = all(
                _same(
                    predictor.predict(booster, rows, margin),
                    _inplace(booster, rows, margin, iteration_range),
                )
                for booster in boosters
                for rows, margin in _probes(n_features)
            )
        except (AttributeError, TypeError, ValueError, xgb.core.XGBoostError):
            logger.info("XGBoost's C API is not callable as expected: using inplace_predict")
            return None
        if not agrees:
            logger.warning("direct C API prediction differs from inplace_predict: not used")
        return predictor if agrees else None

    def predict(self, booster: xgb.Booster, features: Features, margin: bool) -> np.ndarray:
        """For one row or more (the algorithm answers an empty batch itself). Raises
        XGBoostError as ``inplace_predict`` does."""
        shape = ctypes.POINTER(ctypes.c_uint64)()
        dims = ctypes.c_uint64()
        values = ctypes.POINTER(ctypes.c_float)()
        outputs = (ctypes.byref(shape), ctypes.byref(dims), ctypes.byref(values))
        config, proxy = self._configs[margin], self._proxy()
        if isinstance(features, np.ndarray):
            data = _interface(np.ascontiguousarray(features))
            call = _LIB.XGBoosterPredictFromDense(booster.handle, data, config, proxy, *outputs)
        else:
            # Held here until the call returns: the interfaces point into them.
            parts = [
                np.ascontiguousarray(a) for a in (features.indptr, features.indices, features.data)
            ]
            width = ctypes.c_uint64(features.shape[1])
            call = _LIB.XGBoosterPredictFromCSR(
                booster.handle, *map(_interface, parts), width, config, proxy, *outputs
            )
        _check_call(call)
        return _copied(values, tuple(shape[i] for i in range(dims.value)))

    def _proxy(self) -> Any:
        proxy = getattr(self._proxies, "proxy", None)
        if proxy is None:
            proxy = self._proxies.proxy = _ProxyDMatrix()
        return proxy.handle


def same_predictions(
    first: xgb.Booster, second: xgb.Booster, iteration_range: tuple[int, int], n_features: int
) -> bool:
    """True when ``inplace_predict`` of both boosters agrees bit for bit on probe rows."""
    return all(
        _same(
            _inplace(second, rows, margin, iteration_range),
            _inplace(first, rows, margin, iteration_range),
        )
        for rows, margin in _probes(n_features)
    )


def _interface(array: np.ndarray) -> bytes:
    """The array interface (JSON) of a C-contiguous array; the caller keeps it alive."""
    shape = b", ".join(b"%d" % n for n in array.shape)
    return _INTERFACE % (array.ctypes.data, shape, array.dtype.str.encode())


def _inplace(
    booster: xgb.Booster, rows: Features, margin: bool, iteration_range: tuple[int, int]
) -> np.ndarray:
    return inplace_or_matrix(booster, rows, margin, iteration_range)


def inplace_or_matrix(
    booster: xgb.Booster, rows: Features, margin: bool, iteration_range: tuple[int, int]
) -> np.ndarray:
    """``inplace_predict``; for a booster without it (gblinear), the same prediction from a
    DMatrix of the rows (missing values NaN, and absent CSR entries, as inplace_predict)."""
    kind = "margin" if margin else "value"
    try:
        answer = booster.inplace_predict(
            rows,
            iteration_range=iteration_range,
            predict_type=kind,
            missing=np.nan,
            validate_features=False,
        )
    except xgb.core.XGBoostError as exc:
        if INPLACE_UNSUPPORTED not in str(exc):
            raise
        matrix = xgb.DMatrix(rows, missing=np.nan)
        answer = booster.predict(
            matrix, output_margin=margin, iteration_range=iteration_range, validate_features=False
        )
    return np.asarray(answer)


def _same(got: np.ndarray, expected: np.ndarray) -> bool:
    return got.shape == expected.shape and bool(np.array_equal(got, expected, equal_nan=True))


def _config(iteration_range: tuple[int, int], margin: bool) -> bytes:
    """The argument JSON, exactly as ``inplace_predict`` writes it."""
    arguments = {
        "type": 1 if margin else 0,
        "training": False,
        "iteration_begin": int(iteration_range[0]),
        "iteration_end": int(iteration_range[1]),
        "missing": float("nan"),
        "strict_shape": False,
        "cache_id": 0,
    }
    return json.dumps(arguments).encode()


def _copied(values: Any, shape: tuple[int, ...]) -> np.ndarray:
    """The prediction as a new float32 array (XGBoost reuses its buffer on the next call)."""
    size = math.prod(shape)
    if size == 0:
        return np.zeros(shape, dtype=np.float32)
    buffer = (ctypes.c_float * size).from_address(ctypes.addressof(values.contents))
    return np.frombuffer(memoryview(buffer), dtype=np.float32).reshape(shape).copy()


def _probes(n_features: int) -> list[tuple[Features, bool]]:
    """(rows, margin) to compare predictions on: one row, rows with missing values, zeros,
    each dense and as CSR (also one narrower than the model); values and margins. At most
    PROBE_CELLS values per batch; wider models (where each XGBoost call costs tens of ms) get
    one row with missing values: its values dense, its margins as CSR."""
    rng = np.random.default_rng(0)
    if n_features > PROBE_CELLS:
        row = rng.normal(size=(1, n_features)).astype(np.float32)
        row[0, ::2] = np.nan
        return [(row, False), (sp.csr_matrix(row), True)]
    n_rows = max(1, min(5, PROBE_CELLS // max(n_features, 1)))
    rows = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    rows[min(1, n_rows - 1), ::2] = np.nan  # missing values take the default branches
    rows[min(2, n_rows - 1), 1::2] = 0.0  # absent from the CSR form below: missing there
    zeros = np.zeros((min(2, n_rows), n_features), dtype=np.float32)
    dense = [rows[:1].copy(), rows, zeros]
    sparse = [sp.csr_matrix(batch) for batch in dense]
    narrow = sp.csr_matrix(rows[:, : max(1, n_features // 2)])
    narrow = sp.csr_matrix((narrow.data, narrow.indices, narrow.indptr), shape=rows.shape)
    batches: list[Features] = [*dense, *sparse, narrow]
    return [(batch, margin) for batch in batches for margin in (False, True)]
