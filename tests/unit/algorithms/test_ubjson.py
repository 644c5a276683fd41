"""The UBJSON completeness check that runs before XGBoost parses a binary model."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

from smserve.algorithms.ubjson import Truncated, UbjsonError, check_complete


@pytest.fixture(scope="module")
def ubj_model(model_features: np.ndarray) -> bytes:
    x = model_features
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(x, np.digitize(x[:, 0], [-0.5, 0.5])), 4)
    booster.set_attr(best_iteration="3", feature_note="ünïcode")
    return bytes(booster.save_raw("ubj"))


def test_a_complete_model_passes(ubj_model: bytes) -> None:
    check_complete(ubj_model)


def test_every_cut_of_a_model_is_truncated(ubj_model: bytes) -> None:
    # XGBoost 3 segfaults on many of these cuts; the check must catch every one of them.
    for cut in range(len(ubj_model)):
        with pytest.raises(Truncated):
            check_complete(ubj_model[:cut])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{i\x01aZ}xyz", "3 unexpected bytes after the document"),
        (b"{i\x01aQ}", "unknown marker 'Q'"),
        (b"{S", "expected a length"),
        (b"[$d]", r"'\$' without '#'"),
        (b"[#i\xff", "negative length -1"),
    ],
    ids=["trailing-bytes", "unknown-marker", "key-without-length", "type-without-count", "neg"],
)
def test_malformed_documents_say_where(data: bytes, message: str) -> None:
    with pytest.raises(UbjsonError, match=message):
        check_complete(data)


def test_typed_arrays_are_skipped_by_their_declared_size() -> None:
    check_complete(b"[$d#i\x02" + b"\x00" * 8)
    with pytest.raises(Truncated):
        check_complete(b"[$d#L" + (10**12).to_bytes(8, "big") + b"\x00" * 8)


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(UbjsonError, match="nested deeper"):
        check_complete(b"[" * 300 + b"]" * 300)
