"""Every model file SageMaker's built-in XGBoost ever wrote, as a document the installed
XGBoost reads: the legacy binary format (``binary``, converted by ``document``, with the
conventions of the version that wrote it undone by ``conventions``) and pickled Boosters of
every generation (``pickles``, read without running code). JSON and UBJSON files pass as they
are. Everything ends as bytes of one JSON or UBJSON model document.
"""

from __future__ import annotations

import re
from pathlib import Path

from smserve.algorithms.model_files import starts_like_pickle
from smserve.algorithms.xgboost.legacy.binary import looks_legacy, read
from smserve.algorithms.xgboost.legacy.document import to_ubjson
from smserve.algorithms.xgboost.legacy.pickles import Document, describe_binary, pickled_document

__all__ = ["Document", "model_document"]

_JSON_START = re.compile(rb"\s*\{\s*[\"}]")


def model_document(path: Path, data: bytes, allow_pickle: bool) -> Document:
    """The model file ``path`` (its bytes ``data``) as a JSON or UBJSON model document."""
    if looks_legacy(data):  # first: 0.90's files start with a float, any byte
        model = read(path, data)
        return Document(to_ubjson(path, model), describe_binary(model))
    if starts_like_pickle(data):
        return pickled_document(path, data, allow_pickle)
    kind = "JSON" if _JSON_START.match(data) else "UBJSON" if data.startswith(b"{") else "unknown"
    return Document(data, f"{kind} (Booster.save_model)")
