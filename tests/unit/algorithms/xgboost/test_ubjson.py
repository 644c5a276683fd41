"""Decoding UBJSON model documents before XGBoost parses them: the compiled decoder
(``_ubjson.c``) and the Python one give the same values, and refuse the same documents, down to
every cut of a real model and thousands of corrupted ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.xgboost import ubjson
from smserve.algorithms.xgboost.ubjson import Truncated, UbjsonError, decode, decode_in_python

Decoder = Callable[[bytes], Any]
DECODERS = {"compiled": decode, "python": decode_in_python}


def test_the_compiled_decoder_is_built() -> None:
    # Optional for a source install, but this checkout builds it (as the image does).
    assert ubjson._ubjson is not None


@pytest.fixture(params=list(DECODERS))
def decoder(request: pytest.FixtureRequest) -> Decoder:
    return DECODERS[request.param]


@pytest.fixture(scope="module")
def ubj_model(model_features: np.ndarray) -> bytes:
    x = model_features
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(x, np.digitize(x[:, 0], [-0.5, 0.5])), 4)
    booster.set_attr(best_iteration="3", feature_note="ünïcode")
    return bytes(booster.save_raw("ubj"))


def plain(value: Any) -> Any:
    """A decoded document with every typed array as (its dtype, its values)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, ubjson.TYPED_ARRAYS):
        array = np.asarray(value)
        return (array.dtype.str, array.tolist())
    return value


def outcome(decoder: Decoder, data: bytes) -> Any:
    try:
        return plain(decoder(data))
    except UbjsonError as exc:
        return type(exc)


def test_both_decoders_read_a_model_alike(ubj_model: bytes) -> None:
    compiled, python = (plain(decoder(ubj_model)) for decoder in DECODERS.values())
    assert compiled == python
    tree = python["learner"]["gradient_booster"]["model"]["trees"][0]
    assert tree["split_conditions"][0] == ">f4"
    assert python["learner"]["attributes"]["feature_note"] == "ünïcode"


def test_typed_arrays_are_exact_views(ubj_model: bytes) -> None:
    tree = decode(ubj_model)["learner"]["gradient_booster"]["model"]["trees"][1]
    in_python = decode_in_python(ubj_model)["learner"]["gradient_booster"]["model"]["trees"][1]
    expected = np.asarray(in_python["split_conditions"])
    assert np.array_equal(np.asarray(tree["split_conditions"]), expected)
    assert len(tree["left_children"]) == int(tree["tree_param"]["num_nodes"])


def test_every_cut_of_a_model_is_truncated(ubj_model: bytes, decoder: Decoder) -> None:
    # XGBoost 3 segfaults on many of these cuts; the decoder must refuse every one of them.
    for cut in range(len(ubj_model)):
        with pytest.raises(Truncated):
            decoder(ubj_model[:cut])


def test_corrupted_models_are_decoded_or_refused_alike(ubj_model: bytes) -> None:
    rng = np.random.default_rng(11)
    for _ in range(3000):
        data = bytearray(ubj_model)
        for at in rng.integers(0, len(data), size=rng.integers(1, 4)):
            data[at] = int(rng.integers(0, 256))
        corrupted = bytes(data)
        assert outcome(decode, corrupted) == outcome(decode_in_python, corrupted)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{i\x01aZ}xyz", "3 unexpected bytes after the document"),
        (b"{i\x01aQ}", "unknown marker 'Q'"),
        (b"{S", "expected a length"),
        (b"[$d]", r"'\$' without '#'"),
        (b"[#i\xff", "negative length -1"),
        (b"[$Z#L\x7f\xff\xff\xff\xff\xff\xff\xff", "more than the document could hold"),
    ],
    ids=[
        "trailing-bytes",
        "unknown-marker",
        "key-without-length",
        "type-without-count",
        "neg",
        "constants",
    ],
)
def test_malformed_documents_say_where(data: bytes, message: str, decoder: Decoder) -> None:
    with pytest.raises(UbjsonError, match=message):
        decoder(data)


def test_typed_arrays_are_bounded_by_their_declared_size(decoder: Decoder) -> None:
    assert np.asarray(decoder(b"[$d#i\x02" + b"\x00" * 8)).tolist() == [0.0, 0.0]
    with pytest.raises(Truncated):
        decoder(b"[$d#L" + (10**12).to_bytes(8, "big") + b"\x00" * 8)
    with pytest.raises(Truncated):  # a count whose byte size overflows 64 bits
        decoder(b"[$L#L" + (2**62).to_bytes(8, "big"))


def test_deep_nesting_is_refused(decoder: Decoder) -> None:
    with pytest.raises(UbjsonError, match="nested deeper"):
        decoder(b"[" * 300 + b"]" * 300)


def test_a_typed_array_is_a_read_only_view_that_keeps_its_document_alive() -> None:
    data = b"[$l#i\x02" + (7).to_bytes(4, "big") + (-3).to_bytes(4, "big", signed=True)
    array = decode(bytes(bytearray(data)))  # the only reference to its document
    assert np.asarray(array).tolist() == [7, -3]
    assert memoryview(array).format == ">i"
    assert len(array) == 2
    assert memoryview(array).readonly
    assert not np.asarray(array).flags.writeable
    assert b"".join([array, array]) == data[6:] * 2


def test_strings_that_are_not_utf8_are_refused(decoder: Decoder) -> None:
    with pytest.raises(UbjsonError, match="not UTF-8"):
        decoder(b"Si\x02\xff\xfe")
