"""What a model file that no algorithm claims looks like, for the message that refuses it,
and which files are of a format or a name no XGBoost writes (so the catch-all leaves them
alone).

``model_algo-1`` is the file SageMaker's k-means, PCA, Linear Learner, Factorization
Machines and others all write: an MXNet NDArray list (k-means: one array; PCA: the arrays
``s``, ``v`` and ``mean``) or a zip (Linear Learner, Factorization Machines). Told apart
by their first bytes and, for an NDArray file on disk, its array headers and names (a
bounded read, ``smserve.algorithms.ndarray_head``). Imports no numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from smserve.algorithms.confinement import open_file
from smserve.algorithms.heads import ModelFile
from smserve.algorithms.ndarray_head import LIST_MAGIC, ListHead, read_head, read_list_head

FIRST_PARTY_NAME = "model_algo-1"  # what SageMaker's own algorithms (not XGBoost) write
ZIP_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"
# The arrays a SageMaker built-in keeps in its model_algo-1 NDArray file, by name.
KNOWN_ARRAYS = {frozenset({"s", "v", "mean"}): "a SageMaker PCA model"}


def is_foreign(file: ModelFile) -> bool:
    """Whether ``file`` is not XGBoost's: it starts like an MXNet NDArray file, a zip or a
    numpy array, or it is a ``model_algo-1``, the name XGBoost's built-in never writes."""
    return file.name == FIRST_PARTY_NAME or file.head.startswith((LIST_MAGIC, ZIP_MAGIC, NPY_MAGIC))


def looks_like(file: ModelFile) -> str:
    """What ``file`` looks like, as a phrase: "a SageMaker PCA model (arrays s, v, mean)"."""
    if file.head.startswith(LIST_MAGIC):
        return _ndarray(_list_head(file))
    if file.head.startswith(ZIP_MAGIC):
        return _zip(file.head)
    if file.head.startswith(NPY_MAGIC):
        return "a numpy array (k-means reads one from a file named *.npy)"
    if not file.size:
        return "an empty file"
    return f"a {file.size}-byte file of no format served here (it starts {file.head[:8]!r})"


def what_they_are(files: Sequence[ModelFile]) -> str:
    """ "; NAME is WHAT" for each foreign file in ``files``, for a message; "" for none."""
    return "".join(f"; {file.name} is {looks_like(file)}" for file in files if is_foreign(file))


def unclaimed(files: Sequence[ModelFile], served: str) -> str:
    """The message refusing ``files``, which no algorithm of ``served`` claims."""
    each = "; ".join(f"{file.path or file.name} is {looks_like(file)}" for file in files)
    return f"{each}: this image serves {served}"


def _list_head(file: ModelFile) -> ListHead | None:
    if file.path is None:  # inside an archive: the head is all there is to read
        return read_head(file.head)
    try:
        with open_file(file.path) as stream:
            return read_list_head(stream)
    except OSError:
        return read_head(file.head)


def _ndarray(head: ListHead | None) -> str:
    if head is None:
        return "an MXNet NDArray file cut short in its header"
    known = KNOWN_ARRAYS.get(frozenset(head.names)) if head.complete else None
    if known:
        return f"{known} (arrays {', '.join(head.names)})"
    plural = "array" if head.count == 1 else "arrays"
    return f"an MXNet NDArray file holding {head.count} {plural}{_arrays(head)}"


def _arrays(head: ListHead) -> str:
    if head.names:
        return f" ({', '.join(head.names)})"
    shapes = ", ".join(f"{a.dtype} {a.shape}" for a in head.arrays)
    return f" ({shapes}{'' if head.complete else ', ...'})" if shapes else ""


def _zip(head: bytes) -> str:
    size = struct.unpack_from("<H", head, 26)[0] if len(head) >= 30 else 0
    first = head[30 : 30 + size].decode("utf-8", "replace")
    entry = f", first entry {first}" if first else ""
    return (
        f"a zip archive (SageMaker's Linear Learner and Factorization Machines write their "
        f"model_algo-1 as a zip of MXNet files{entry})"
    )
