"""JSON instances given as objects of feature names (application/json and JSON Lines): put in
the model's order; a missing or unknown name is a 400 naming it; other forms are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from smserve.codecs.base import DecodeContext
from smserve.codecs.json import JsonCodec
from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.errors import DecodeError
from smserve.media import JSON, JSONLINES, MediaType

NAMED = DecodeContext(("age", "income", "tenure"))


def json_rows(body: bytes, context: DecodeContext = NAMED) -> np.ndarray:
    return np.asarray(JsonCodec().decode(body, MediaType(JSON), context).features)


def test_objects_are_put_in_the_models_order() -> None:
    body = (
        b'{"instances": [{"income": 5.2e4, "age": 31, "tenure": null},'
        b' {"tenure": 2, "age": 40, "income": 1}]}'
    )
    expected = np.array([[31, 5.2e4, np.nan], [40, 1, 2]], dtype=np.float32)
    np.testing.assert_array_equal(json_rows(body), expected)


def test_json_lines_objects_by_name() -> None:
    body = b'{"tenure": 3, "income": 2, "age": 1}\n\n{"age": 4, "income": 5, "tenure": 6}\n'
    batch = JsonLinesCodec().decode(body, MediaType(JSONLINES), NAMED)
    np.testing.assert_array_equal(batch.features, [[1, 2, 3], [4, 5, 6]])


def test_one_feature_model() -> None:
    got = json_rows(b'[{"x": 2.5}]', DecodeContext(("x",)))
    np.testing.assert_array_equal(got, [[2.5]])


def test_unnamed_model_reads_f_names() -> None:
    body = b'{"instances": [{"f1": 2, "f0": 1}]}'
    np.testing.assert_array_equal(json_rows(body, DecodeContext(("f0", "f1"))), [[1, 2]])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"instances": [{"age": 1, "income": 2, "tenure": 3}, {"age": 1, "income": 2}]}',
            r"instances\[1\]: feature 'tenure' is missing",
        ),
        (
            b'{"instances": [{"age": 1, "income": 2, "tenure": 3, "id": 7}]}',
            r"instances\[0\]: 'id': not model features",
        ),
        (
            b'{"instances": [{"age": 1, "income": "2", "tenure": 3}]}',
            r"instances\[0\]: features\[1\] is a string",
        ),
    ],
    ids=["missing", "extra", "string"],
)
def test_bad_objects_are_400_naming_instance_and_name(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        json_rows(body)


def test_without_feature_names_an_object_needs_features() -> None:
    with pytest.raises(DecodeError, match='expected "features"'):
        json_rows(b'[{"age": 1}]', DecodeContext())


def test_other_forms_are_unchanged_with_names() -> None:
    body = b'{"instances": [[1, 2, 3], {"features": [4, 5, 6], "label": 1}]}'
    np.testing.assert_array_equal(json_rows(body), [[1, 2, 3], [4, 5, 6]])
