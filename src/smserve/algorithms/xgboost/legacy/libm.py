"""float32 ``logf`` and ``expf`` from the C library XGBoost itself calls (libm), not numpy's:
the two differ in the last bit for some inputs, and a base margin must be the very float
XGBoost computed. numpy's are the fallback where libm cannot be loaded.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np


def _libm_function(name: str) -> Callable[[float], float] | None:
    found = ctypes.util.find_library("m")
    try:
        function = getattr(ctypes.CDLL(found), name)
    except (OSError, AttributeError, TypeError):
        return None
    function.restype = ctypes.c_float
    function.argtypes = [ctypes.c_float]
    return function  # type: ignore[no-any-return]


_LOGF = _libm_function("logf")
_EXPF = _libm_function("expf")


def logf(value: np.float32) -> np.float32:
    if _LOGF is None:
        with np.errstate(all="ignore"):
            return np.float32(np.log(np.float32(value)))
    return np.float32(_LOGF(float(value)))


def expf(value: np.float32) -> np.float32:
    if _EXPF is None:
        with np.errstate(all="ignore"):
            return np.float32(np.exp(np.float32(value)))
    return np.float32(_EXPF(float(value)))
