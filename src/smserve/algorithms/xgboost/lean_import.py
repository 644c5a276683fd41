"""Importing XGBoost without the scikit-learn and pandas wrappers it never needs here.

When they are installed, ``import xgboost`` imports scikit-learn and pandas for its wrappers of
them (``XGBClassifier``, DataFrame input): 0.9 s of its 1.35 s import and about 130 MB per
process on this project's machine. Serving, scoring and training hand XGBoost numpy and scipy
arrays only, so ``import_lean`` imports it with both hidden; XGBoost then records them as
absent, and they stay importable by anything else afterwards.

``scipy.special`` is hidden too: only XGBoost's scikit-learn wrapper module imports it (for
``softmax``), and it took 29 ms of the 41 ms left. Without it XGBoost leaves that module and
its plotting out (its ``__init__`` allows that), and ``import xgboost`` takes 12 ms. XGBoost's
core imports scipy.sparse: ``smserve.scipy_sparse`` imports it first, without the numpy modules
scipy's array-API layer would load for nothing. A pickled scikit-learn wrapper (opted in with
SMSERVE_ALLOW_PICKLE) still unpickles: its unpickling imports ``xgboost.sklearn``, whole, and
scikit-learn with it.
"""

from __future__ import annotations

import sys

UNUSED_BY_XGBOOST = ("sklearn", "pandas", "scipy.special")


def import_lean() -> None:
    """Import XGBoost (if not yet imported) with ``UNUSED_BY_XGBOOST`` hidden from it
    (``sys.modules[name] = None`` makes their import fail), then unhide them."""
    if "xgboost" in sys.modules:
        return
    import smserve.scipy_sparse  # noqa: F401 (before XGBoost's core imports scipy.sparse)

    hidden = [name for name in UNUSED_BY_XGBOOST if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import xgboost  # noqa: F401
    except ImportError:
        pass  # a k-means-only installation; loading an XGBoost model says so
    finally:
        for name in hidden:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
