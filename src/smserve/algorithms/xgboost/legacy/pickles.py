"""Reading a pickled XGBoost Booster of any generation without running code from the file.

A Booster pickle needs three globals: ``xgboost.core.Booster`` (created empty, then given its
state: a dict with ``handle``, the model's bytes, and Python attributes such as
``feature_names``), ``builtins.bytearray`` and, in some protocols, ``_codecs.encode``. The
restricted unpickler (``model_files.unpickle``) admits those alone, with ``BoosterState``
standing in for the Booster, so nothing of XGBoost's runs either. What the handle holds, by
generation (wave4-facts §2):

* 0.90: the legacy binary model itself;
* 1.0-1.2: ``CONFIG-offset:``, an int64 offset, the legacy binary (of that many bytes), then
  the training configuration as JSON;
* 1.3-1.5: JSON ``{"Config": ..., "Model": ...}``;
* 1.6 and later: the same as UBJSON.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smserve.algorithms.model_files import unpickle
from smserve.algorithms.xgboost.legacy import base_last, conventions
from smserve.algorithms.xgboost.legacy.binary import read
from smserve.algorithms.xgboost.legacy.document import Extras, to_ubjson
from smserve.algorithms.xgboost.ubjson import UbjsonError, member_bytes
from smserve.errors import ModelLoadError

CONFIG_MARKER = b"CONFIG-offset:"
_OFFSET_END = len(CONFIG_MARKER) + 8


class BoosterState:
    """Stands in for ``xgboost.core.Booster`` while a pickle is read: keeps the state."""

    state: dict[str, Any]

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (state, slot state)
            state = state[0]
        self.state = state if isinstance(state, dict) else {}


def byte_array(*args: Any) -> bytearray:
    """``bytearray`` as a pickle calls it (bytes, or text and its encoding), but never with a
    size: ``bytearray(10**12)`` from a 30-byte pickle would allocate a terabyte."""
    if args and isinstance(args[0], int):
        raise ValueError("bytearray(size) is not how a Booster pickle makes its bytes")
    return bytearray(*args)


def latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as protocol 2 pickles bytes with it: latin-1 text only."""
    if encoding.replace("-", "").replace("_", "").lower() != "latin1":
        raise ValueError(f"_codecs.encode with {encoding!r} is not how a pickle writes bytes")
    return codecs.encode(text, "latin1")


SUBSTITUTES = {
    ("xgboost.core", "Booster"): BoosterState,
    ("builtins", "bytearray"): byte_array,
    ("_codecs", "encode"): latin1_encode,
}


@dataclass(frozen=True)
class Document:
    """A model as the installed XGBoost reads it (JSON or UBJSON bytes), and what it came
    from (format and era), for logs and ``smserve model inspect``."""

    data: bytes
    origin: str


def pickled_document(path: Path, data: bytes, allow_pickle: bool) -> Document:
    loaded = unpickle(path, data, allow_pickle, SUBSTITUTES)
    state = _booster_state(path, loaded)
    handle = state.get("handle")
    if not isinstance(handle, bytes | bytearray) or not handle:
        raise ModelLoadError(f"{path}: the pickled Booster holds no model")
    document = handle_document(path, bytes(handle), _extras(state))
    return Document(document.data, f"pickle, {document.origin}")


def _booster_state(path: Path, loaded: Any) -> dict[str, Any]:
    """The Booster's state; a scikit-learn wrapper (full unpickler only) holds its Booster."""
    booster = getattr(loaded, "__dict__", {}).get("_Booster", loaded)
    if isinstance(booster, BoosterState):
        return getattr(booster, "state", {})
    raise ModelLoadError(f"{path}: the pickle holds a {type(loaded).__name__}, not a Booster")


def _extras(state: dict[str, Any]) -> Extras:
    """The Python Booster's feature names and types, unless they are the names XGBoost before
    1.0 gave every unnamed DMatrix (f0, f1, ...): the installed XGBoost gives none, and would
    then refuse unnamed input."""
    names = _strings(state.get("feature_names"))
    if names == [f"f{index}" for index in range(len(names))]:
        return Extras()
    return Extras(feature_names=names, feature_types=_strings(state.get("feature_types")))


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list | tuple) else []


def handle_document(path: Path, handle: bytes, extras: Extras) -> Document:
    if handle.startswith(CONFIG_MARKER):
        return _config_offset(path, handle, extras)
    if handle.startswith(b'{"'):
        return _json_pair(path, handle)
    if handle.startswith(b"{"):
        return _ubjson_pair(path, handle)
    model = read(path, handle)
    return Document(to_ubjson(path, model, extras), describe_binary(model))


def describe_binary(model: Any) -> str:
    major, minor = model.version
    era = f"XGBoost {major}.{minor}" if major else "XGBoost before 1.0 (0.90 or older)"
    header = "with binf header" if model.has_binf else "no binf header"
    trees = "" if model.trees is None else f", {len(model.trees.nodes)} trees in the file"
    return f"legacy binary ({header}), written by {era}{trees}"


def _config_offset(path: Path, handle: bytes, extras: Extras) -> Document:
    """1.0-1.2: the binary after the marker and its int64 length, then the JSON config."""
    if len(handle) < _OFFSET_END:
        raise ModelLoadError(f"{path}: the pickled handle ends inside its CONFIG-offset header")
    offset = int.from_bytes(handle[len(CONFIG_MARKER) : _OFFSET_END], "little", signed=True)
    if not 0 < offset <= len(handle) - _OFFSET_END:
        raise ModelLoadError(f"{path}: the pickled handle's CONFIG-offset {offset} is invalid")
    binary = handle[_OFFSET_END : _OFFSET_END + offset]
    parallel = _num_parallel_tree(handle[_OFFSET_END + offset :])
    model = read(path, binary)
    extras = Extras(extras.feature_names, extras.feature_types, parallel)
    origin = f"1.0-1.2 CONFIG-offset layout holding a {describe_binary(model)}"
    return Document(to_ubjson(path, model, extras), origin)


def _num_parallel_tree(config_text: bytes) -> int | None:
    try:
        config = json.loads(config_text)
        train_param = config["learner"]["gradient_booster"]["gbtree_train_param"]
        return int(train_param["num_parallel_tree"])
    except (ValueError, KeyError, TypeError):
        return None


def _json_pair(path: Path, handle: bytes) -> Document:
    """1.3-1.5: JSON ``{"Config", "Model"}``; the Model is a JSON model document."""
    try:
        model = json.loads(handle)["Model"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"{path}: the pickled Booster's JSON is not readable: {exc}") from None
    if not _base_last(model):  # the bias trees hold the old margin, logitraw's included
        _undo_logitraw_margin(model)
    _give_linear_rounds(model)
    version = ".".join(str(v) for v in model.get("version", ["?"]))
    return Document(
        json.dumps(model).encode(), f"JSON {{Config, Model}}, written by XGBoost {version}"
    )


def _base_last(model: dict[str, Any]) -> bool:
    try:
        return base_last.into_json_dart(model)
    except (KeyError, TypeError, ValueError, IndexError):
        return False  # XGBoost reports what is missing when it loads the document


def _undo_logitraw_margin(model: dict[str, Any]) -> None:
    """binary:logitraw before 1.3.1 took its base margin as the logit of base_score."""
    try:
        learner = model["learner"]
        version = tuple(int(v) for v in model["version"])
        if learner["objective"]["name"] != "binary:logitraw" or version >= (1, 3, 1):
            return
        param = learner["learner_model_param"]
        base = conventions.logit(conventions.F(float(param["base_score"])))
        param["base_score"] = conventions.float_text(base)
    except (KeyError, TypeError, ValueError):
        return  # XGBoost reports what is missing when it loads the document


def _give_linear_rounds(model: dict[str, Any]) -> None:
    """gblinear before 1.4 records no boosted rounds; with none the installed XGBoost takes
    base_score as a margin (see ``document._linear``)."""
    try:
        booster = model["learner"]["gradient_booster"]
        if booster["name"] == "gblinear" and "boosted_rounds" not in booster["model"]:
            booster["model"]["boosted_rounds"] = 1
    except (KeyError, TypeError):
        return


def _ubjson_pair(path: Path, handle: bytes) -> Document:
    """1.6 and later: UBJSON ``{"Config", "Model"}``."""
    try:
        model = member_bytes(handle, "Model")
    except UbjsonError as exc:
        raise ModelLoadError(
            f"{path}: the pickled Booster's UBJSON is not readable: {exc}"
        ) from None
    if model is None:
        raise ModelLoadError(f"{path}: the pickled Booster's UBJSON has no Model")
    return Document(model, "UBJSON {Config, Model} (XGBoost 1.6 or later)")
