"""Which model files are k-means', by what they hold: a ``model_algo-1`` whose head is an
MXNet NDArray list of exactly one array (the built-in's centroids, as a list or a one-entry
dict), or cut short before its array count (the loader then says it is truncated or empty);
a ``*.npy`` array; a ``*.skops`` scikit-learn KMeans. A ``model_algo-1`` holding several
arrays (PCA's ``s``, ``v``, ``mean``) or a zip (Linear Learner's) is not k-means'. Imports no
numpy: the table of algorithms asks before numpy may be imported.
"""

from __future__ import annotations

from smserve.algorithms.heads import ModelFile
from smserve.algorithms.ndarray_head import LIST_HEADER_BYTES, read_head, starts_like_ndarray

BUILTIN_NAME = "model_algo-1"
NPY_SUFFIX = ".npy"
SKOPS_SUFFIX = ".skops"
EXPECTED = f"{BUILTIN_NAME} (MXNet NDArray), *{NPY_SUFFIX} or *{SKOPS_SUFFIX} (scikit-learn KMeans)"


def is_kmeans_file(file: ModelFile) -> bool:
    """Whether ``file`` is a k-means artifact (see the module doc)."""
    if file.name.lower().endswith((NPY_SUFFIX, SKOPS_SUFFIX)):
        return True
    return file.name == BUILTIN_NAME and _one_array_or_cut(file.head)


def _one_array_or_cut(head: bytes) -> bool:
    if not starts_like_ndarray(head):
        return False
    if len(head) < LIST_HEADER_BYTES:
        return True
    described = read_head(head)
    return described is not None and described.count == 1
