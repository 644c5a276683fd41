"""Classify and regress with tf.Example JSON, through the transport-free API."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smserve.tfserving.api import TFServingAPI
from tests.tfserving.fakes import BODY_LIMIT, FakeKMeans, FakeSource, FakeXGBoost, handle


@pytest.fixture
def api() -> TFServingAPI:
    source = FakeSource()
    source.add("reg", 1, FakeXGBoost("reg:squarederror", n=3))
    source.add("bin", 1, FakeXGBoost("binary:logistic", n=2))
    source.add("multi", 1, FakeXGBoost("multi:softprob", n=3))
    source.add("km", 1, FakeKMeans(n=2))
    return TFServingAPI(source, BODY_LIMIT)


def call(api: TFServingAPI, path: str, body: str) -> tuple[int, Any]:
    reply = handle(api, "POST", path, body.encode())
    return reply.status, json.loads(reply.body)


def test_regress_maps_features_by_name(api: TFServingAPI) -> None:
    body = '{"examples": [{"f0": 1.0, "f1": 2.0, "f2": 3.0}, {"f2": [4.0], "f0": 1, "f1": 0}]}'
    assert call(api, "/v1/models/reg:regress", body) == (200, {"results": [6.0, 5.0]})


def test_regress_layout_is_one_line() -> None:
    source = FakeSource()
    source.add("reg", 1, FakeXGBoost(n=1))
    reply = handle(
        TFServingAPI(source, BODY_LIMIT),
        "POST",
        "/v1/models/reg:regress",
        b'{"examples": [{"f0": 0.5}, {"f0": 2.0}]}',
    )
    assert reply.body == b'{\n    "results": [0.5, 2.0]\n}'


def test_context_applies_to_every_example(api: TFServingAPI) -> None:
    body = '{"context": {"f2": 10.0}, "examples": [{"f0": 1.0, "f1": 1.0}, {"f0": 0.0, "f1": 0.0}]}'
    assert call(api, "/v1/models/reg:regress", body) == (200, {"results": [12.0, 10.0]})


def test_a_missing_feature_is_a_missing_value(api: TFServingAPI) -> None:
    status, body = call(api, "/v1/models/reg:regress", '{"examples": [{"f0": 1.0}]}')
    assert status == 200
    assert math.isnan(body["results"][0])


def test_binary_classify_scores_both_classes(api: TFServingAPI) -> None:
    status, body = call(api, "/v1/models/bin:classify", '{"examples": [{"f0": 0.0, "f1": 0.0}]}')
    assert (status, body) == (200, {"results": [[["0", 0.5], ["1", 0.5]]]})


def test_multiclass_classify_lists_every_class(api: TFServingAPI) -> None:
    body = '{"examples": [{"f0": 0.0, "f1": 0.0, "f2": 0.0}]}'
    status, result = call(api, "/v1/models/multi:classify", body)
    assert status == 200
    assert [label for label, _ in result["results"][0]] == ["0", "1", "2"]
    assert [score for _, score in result["results"][0]] == pytest.approx([1 / 3] * 3)


def test_kmeans_classify_is_the_closest_cluster_and_its_negated_distance(
    api: TFServingAPI,
) -> None:
    body = '{"examples": [{"f0": 9.0, "f1": 10.0}, {"f0": 0.0, "f1": 0.0}]}'
    assert call(api, "/v1/models/km:classify", body) == (
        200,
        {"results": [[["1", -1.0]], [["0", -0.0]]]},
    )


def test_classify_layout(api: TFServingAPI) -> None:
    reply = handle(api, "POST", "/v1/models/km:classify", b'{"examples": [{"f0": 0, "f1": 0}]}')
    assert reply.body == b'{\n    "results": [[["0", -0.0]]\n    ]\n}'


ERRORS = [
    (
        "reg:regress",
        '{"x": 1}',
        "JSON Value: {\n    \"x\": 1\n} When method is regress, key 'examples' is expected "
        "and was not found",
    ),
    (
        "reg:classify",
        '{"examples": 1}',
        "JSON Value: {\n    \"examples\": 1\n} Expecting 'examples' value to be an list/array",
    ),
    (
        "reg:regress",
        '{"examples": []}',
        "JSON Value: {\n    \"examples\": []\n} 'examples' value is an empty array",
    ),
    ("reg:regress", '{"examples": [1]}', "Example must be JSON object but got JSON Number"),
    (
        "reg:regress",
        '{"context": [], "examples": [{}]}',
        "Example must be JSON object but got JSON Array",
    ),
    (
        "reg:regress",
        '{"examples": [{"f0": [10, 10.0]}]}',
        "Unexpected element type in feature: f0 expecting type: int64",
    ),
    (
        "reg:regress",
        '{"examples": [{"f0": null}]}',
        "Feature: f0 has element with unexpected JSON type: Null",
    ),
    (
        "reg:regress",
        '{"examples": [{"f0": [[1.0]]}]}',
        "Feature: f0 has element with unexpected JSON type: Array",
    ),
    (
        "reg:regress",
        '{"examples": [{"f0": 18446744073709551615}]}',
        "Feature: f0 has uint64_t element. Only int64_t is supported.",
    ),
    (
        "missing:regress",
        '{"examples": [{"f0": 1.0}]}',
        "Servable not found for request: Latest(missing)",
    ),
    (
        "reg:classify",
        '{"examples": [{"f0": 1.0}]}',
        "No signature was found with the name: classification",
    ),
    (
        "reg:regress",
        '{"signature_name": "serving_default", "examples": [{"f0": 1.0}]}',
        "Expected regression signature method_name to be tensorflow/serving/regress. "
        "Was: tensorflow/serving/predict",
    ),
    (
        "km:regress",
        '{"examples": [{"f0": 1.0}]}',
        "No signature was found with the name: regression",
    ),
    (
        "reg:regress",
        '{"examples": [{"nope": 1.0}]}',
        "Feature: nope is not a feature of this model; its features are f0,f1,f2",
    ),
    (
        "reg:regress",
        '{"examples": [{"f0": [1.0, 2.0]}]}',
        "Feature: f0 has 2 values; each feature of this model takes one",
    ),
    (
        "reg:regress",
        '{"examples": [{"f0": "text"}]}',
        "Feature: f0 holds bytes; this model's features are numbers (int64 or float)",
    ),
]


@pytest.mark.parametrize(("target", "body", "message"), ERRORS, ids=[e[2][:50] for e in ERRORS])
def test_classify_and_regress_errors(
    api: TFServingAPI, target: str, body: str, message: str
) -> None:
    status, result = call(api, f"/v1/models/{target}", body)
    assert result == {"error": message}
    assert status == (404 if "Servable not found" in message else 400)


def test_bool_and_b64_values_are_typed_like_tf(api: TFServingAPI) -> None:
    body = '{"examples": [{"f0": true, "f1": false, "f2": 2}]}'
    assert call(api, "/v1/models/reg:regress", body) == (200, {"results": [3.0]})
    status, result = call(api, "/v1/models/reg:regress", '{"examples": [{"f0": {"b64": "AA=="}}]}')
    assert status == 400
    assert "holds bytes" in result["error"]


def test_real_xgboost_maps_examples_by_the_boosters_feature_names(tmp_path: Path) -> None:
    import xgboost as xgb

    from smserve.algorithms.loading import load_algorithm
    from smserve.config import Settings

    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 2)).astype(np.float32)
    names = ["age", "income"]
    dtrain = xgb.DMatrix(x, label=2 * x[:, 0] - x[:, 1], feature_names=names)
    booster = xgb.train({"max_depth": 2, "nthread": 1}, dtrain, num_boost_round=3)
    (tmp_path / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    source = FakeSource()
    source.add("xgb", 1, load_algorithm(Settings(), tmp_path))
    api = TFServingAPI(source, BODY_LIMIT)
    by_name = call(api, "/v1/models/xgb:regress", '{"examples": [{"income": 0.5, "age": -1.0}]}')
    expected = booster.inplace_predict(np.array([[-1.0, 0.5]], dtype=np.float32))
    assert by_name == (200, {"results": [pytest.approx(float(expected[0]), rel=1e-6)]})
    status, body = call(api, "/v1/models/xgb:regress", '{"examples": [{"f0": 1.0}]}')
    assert (status, body) == (
        400,
        {"error": "Feature: f0 is not a feature of this model; its features are age,income"},
    )


@pytest.mark.parametrize("verb", ["classify", "regress"])
def test_invalid_utf8_in_the_request_is_a_400(api: TFServingAPI, verb: str) -> None:
    # Found by bench/fuzz/fuzz.py: the message echoes the document, lone surrogates and all.
    body = b'{"signature_name": "serving_default", "in\xc0\xafstances": [[1.0]]}'
    reply = handle(api, "POST", f"/v1/models/bin:{verb}", body)
    assert reply.status == 400
    assert "error" in json.loads(reply.body)
