"""``scipy.sparse``, imported without the numpy modules that scipy's array-API layer loads for
nothing. Every smserve module takes scipy.sparse from here (``from smserve.scipy_sparse import
sparse as sp``); a test holds that none imports it directly.

scipy (1.15 on) imports ``scipy._lib.array_api_compat.numpy``, which copies numpy's namespace
with ``from numpy import *`` and ``getattr`` over ``dir(numpy)``. numpy lists its lazily
imported submodules in both, so the copy imports ``numpy.f2py``, ``numpy.testing``,
``numpy.ma``, ``numpy.polynomial`` and the rest: 116 modules, about 60 ms and 10 MiB in every
process that imports scipy.sparse (every serving worker, training job and scoring worker), none
of which scipy's sparse matrices use. Here numpy lists them in neither while scipy is first
imported; the copy then answers those names from numpy when asked, so it still answers every
name it did.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy

# numpy's lazily imported submodules that the array-API copy would import and scipy.sparse
# never uses (numpy.linalg and numpy.fft are left listed: the array API has them).
UNLISTED_WHILE_SCIPY_IMPORTS = (
    "char",
    "ctypeslib",
    "f2py",
    "ma",
    "polynomial",
    "random",
    "rec",
    "testing",
)
ARRAY_API_COPY = "scipy._lib.array_api_compat.numpy"


@contextmanager
def _numpy_submodules_unlisted() -> Iterator[None]:
    """numpy's ``__all__`` and ``dir()`` without ``UNLISTED_WHILE_SCIPY_IMPORTS`` (if scipy is
    not imported yet), restored afterwards."""
    if "scipy" in sys.modules:
        yield
        return
    listed: list[str] = numpy.__all__
    listing: Callable[[], Iterable[str]] = numpy.__dir__
    numpy.__all__ = _unlisted(listed)
    setattr(numpy, "__dir__", lambda: _unlisted(listing()))  # noqa: B010 (a module's __dir__)
    try:
        yield
    finally:
        numpy.__all__ = listed
        setattr(numpy, "__dir__", listing)  # noqa: B010
    _answer_the_rest_from_numpy(sys.modules.get(ARRAY_API_COPY))


def _unlisted(names: Iterable[str]) -> list[str]:
    return [name for name in names if name not in UNLISTED_WHILE_SCIPY_IMPORTS]


def _answer_the_rest_from_numpy(copy: ModuleType | None) -> None:
    """The copy answers a name it lacks (``copy.testing``) as numpy does, importing it then."""
    if copy is not None and not hasattr(copy, "__getattr__"):
        setattr(copy, "__getattr__", _from_numpy)  # noqa: B010


def _from_numpy(name: str) -> object:
    return getattr(numpy, name)


with _numpy_submodules_unlisted():
    import scipy.sparse as sparse

__all__ = ["sparse"]
