"""Predict through the transport-free API: decoding tables with TF Serving's exact messages,
and the layout of predictions/outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smserve.tfserving.api import TFServingAPI
from smserve.tfserving.jsonparse import parse_document
from tests.tfserving.fakes import BODY_LIMIT, FakeKMeans, FakeSource, FakeXGBoost, handle

PREDICT = "/v1/models/reg:predict"


@pytest.fixture
def api() -> TFServingAPI:
    source = FakeSource()
    source.add("reg", 1, FakeXGBoost(n=3))
    source.add("km", 4, FakeKMeans(n=2))
    return TFServingAPI(source, BODY_LIMIT)


def post(api: TFServingAPI, body: bytes | str, path: str = PREDICT) -> tuple[int, Any]:
    data = body.encode() if isinstance(body, str) else body
    reply = handle(api, "POST", path, data)
    return reply.status, parse_document(reply.body).value


OK_BODIES = [
    ('{"instances": [[1, 2, 3], [4, 5, 6]]}', {"predictions": [6.0, 15.0]}),
    ('{"instances": [{"inputs": [1, 2, 3]}]}', {"predictions": [6.0]}),
    ('{"inputs": [[1, 2, 3]]}', {"outputs": [6.0]}),
    ('{"inputs": {"inputs": [[1, 2, 3]], "extra": 1}}', {"outputs": [6.0]}),
    ('{"signature_name": "serving_default", "instances": [[1, 1, 1]]}', {"predictions": [3.0]}),
    ('{"instances": [[1, 2, 3]], "ignored": true}', {"predictions": [6.0]}),
    ('{"instances": [[0.5, 0.25, 0.125]]} trailing', {"predictions": [0.875]}),
]


@pytest.mark.parametrize(("body", "expected"), OK_BODIES, ids=[b for b, _ in OK_BODIES])
def test_predict_accepts(api: TFServingAPI, body: str, expected: Any) -> None:
    assert post(api, body) == (200, expected)


def test_a_nan_token_round_trips(api: TFServingAPI) -> None:
    reply = handle(api, "POST", PREDICT, b'{"instances": [[NaN, 1, 2], [1, 1, 1]]}')
    assert reply.status == 200
    assert reply.body == b'{\n    "predictions": [NaN, 3.0\n    ]\n}'


INFINITE = [
    ('{"instances": [[1, 2, 3], [Infinity, 1, 1]]}', "row 1, column 0"),
    ('{"instances": [[1, -Inf, 3]]}', "row 0, column 1"),
    ('{"inputs": [[1, 2, 1e39]]}', "row 0, column 2"),  # beyond float32's range
]


@pytest.mark.parametrize(("body", "where"), INFINITE, ids=[w for _, w in INFINITE])
def test_an_infinite_input_is_refused_in_tf_servings_envelope(body: str, where: str) -> None:
    """TF Serving predicts on infinities; the service refuses them for every door (XGBoost's
    own DMatrix refuses them too), before the model is called. The answer keeps TF
    Serving's envelope: ``{"error"}``, printed as its JSON writer prints it."""
    source = FakeSource()
    model = FakeXGBoost(n=3)
    source.add("reg", 1, model)
    calls = model.calls  # loading predicts once (a warm-up)
    reply = handle(TFServingAPI(source, BODY_LIMIT), "POST", PREDICT, body.encode())
    message = (
        f"input 'inputs': {where} (0-based) is infinite or beyond float32's range "
        "(about 3.4e38); features must be finite numbers"
    )
    assert (reply.status, reply.body) == (400, f'{{\n    "error": "{message}"\n}}'.encode())
    assert model.calls == calls


ERRORS = [
    ("", "JSON Parse error: The document is empty"),
    ("[1]", "JSON Value: [1] Is not object"),
    (
        '{"signature_name": 1, "instances": [[1, 2, 3]]}',
        'JSON Value: {\n    "signature_name": 1,\n    "instances": [[1, 2, 3]]\n} not formatted '
        "correctly. 'signature_name' key must be a string value.",
    ),
    (
        '{"signature_name": "nope", "instances": [[1, 2, 3]]}',
        'Serving signature name: "nope" not found in signature def',
    ),
    ('{"x": 1}', "Missing 'inputs' or 'instances' key"),
    (
        '{"instances": [[1, 2, 3]], "inputs": [[1, 2, 3]]}',
        'JSON Value: {\n    "instances": [[1, 2, 3]],\n    "inputs": [[1, 2, 3]]\n} Not formatted '
        "correctly expecting only one of 'inputs' or 'instances' keys to exist ",
    ),
    (
        '{"instances": 5}',
        "JSON Value: {\n    \"instances\": 5\n} Expecting 'instances' to be an list/array",
    ),
    ('{"instances": []}', "JSON Value: {\n    \"instances\": []\n} No values in 'instances' array"),
    (
        '{"instances": [[1, 2, 3], [1, 2]]}',
        "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: "
        "Expecting tensor size: 3 but got: 2",
    ),
    (
        '{"instances": [[1, 2, 3], [[1, 2, 3]]]}',
        "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: "
        "Expecting shape [3] but got: [1,3]",
    ),
    (
        '{"instances": [[1, "x", 3]]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        'JSON Value: "x" Type: String is not of expected type: float',
    ),
    (
        '{"instances": [[1, true, 3]]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        "JSON Value: true Type: True is not of expected type: float",
    ),
    (
        '{"instances": [[1, null, 3]]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        "JSON Value: null Type: Null is not of expected type: float",
    ),
    (
        '{"instances": [[[1, 2], [3]]]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        "Encountered list at unexpected size: 1 at level: 1 expected size: 2",
    ),
    (
        '{"instances": [[1, [2], 3]]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        "Encountered list at unexpected level: 1 expected < 1",
    ),
    (
        '{"instances": [[[1], 2]]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        "JSON Value: 2 found at incorrect level: 2 in the JSON DOM. Expected at level: 2",
    ),
    (
        '{"instances": [[1, 2, 3], {"inputs": [1, 2, 3]}]}',
        "Expecting value/list but got object at item 1 of input list",
    ),
    (
        '{"instances": [{"inputs": [1, 2, 3]}, [1, 2, 3]]}',
        "Expecting object but got list at item 1 of input list",
    ),
    (
        '{"instances": [{"inputs": [1, 2, 3], "x": [1]}]}',
        "Failed to process element: 0 key: x of 'instances' list. Error: INVALID_ARGUMENT: "
        "JSON object: does not have named input: x",
    ),
    (
        '{"instances": [{"b64": "AAAA"}]}',
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
        'JSON Value: {\n    "b64": "AAAA"\n} Type: Object is not of expected type: float',
    ),
    ('{"inputs": {"other": [[1, 2, 3]]}}', "Missing named input: inputs in 'inputs' object."),
    (
        '{"inputs": [[1, 2, 3], [4]]}',
        "Encountered list at unexpected size: 1 at level: 1 expected size: 3",
    ),
    (
        '{"instances": [1, 2, 3]}',
        "Input 'inputs' has shape [3], but the model takes [-1,3]: one list of 3 numbers per row",
    ),
    (
        '{"instances": [[1, 2]]}',
        "Input 'inputs' has shape [1,2], but the model takes [-1,3]: one list of 3 numbers per row",
    ),
]


@pytest.mark.parametrize(("body", "message"), ERRORS, ids=[m[:60] for _, m in ERRORS])
def test_predict_errors_are_tf_servings(api: TFServingAPI, body: str, message: str) -> None:
    assert post(api, body) == (400, {"error": message})


def test_a_bad_body_to_a_missing_model_is_a_parse_error(api: TFServingAPI) -> None:
    status, body = post(api, "", "/v1/models/missing:predict")
    assert (status, body) == (400, {"error": "JSON Parse error: The document is empty"})


def test_a_bad_label_beats_a_bad_value(api: TFServingAPI) -> None:
    status, body = post(api, '{"instances": [["x", "y"]]}', "/v1/models/reg/labels/nope:predict")
    assert (status, body) == (400, {"error": "Unrecognized servable version label: nope"})


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/v1/models/missing:predict", "Servable not found for request: Latest(missing)"),
        ("/v1/models/reg/versions/9:predict", "Servable not found for request: Specific(reg, 9)"),
    ],
)
def test_unknown_models_and_versions_are_404(api: TFServingAPI, path: str, message: str) -> None:
    assert post(api, '{"instances": [[1, 2, 3]]}', path) == (404, {"error": message})


def test_several_outputs_give_one_object_per_row(api: TFServingAPI) -> None:
    reply = handle(api, "POST", "/v1/models/km:predict", b'{"instances": [[0, 0], [9, 9]]}')
    assert reply.status == 200
    assert reply.version == 4
    assert json.loads(reply.body) == {
        "predictions": [
            {"closest_cluster": 0.0, "distance_to_cluster": 0.0},
            {"closest_cluster": 1.0, "distance_to_cluster": 1.41421354},
        ]
    }
    assert reply.body.startswith(b'{\n    "predictions": [\n        {\n            "closest')


def test_columnar_several_outputs_give_an_object_of_tensors(api: TFServingAPI) -> None:
    reply = handle(api, "POST", "/v1/models/km:predict", b'{"inputs": [[0, 0], [9, 9]]}')
    assert json.loads(reply.body) == {
        "outputs": {"closest_cluster": [0.0, 1.0], "distance_to_cluster": [0.0, 1.41421354]}
    }


def test_row_layout_is_single_line_per_row() -> None:
    source = FakeSource()
    source.add("multi", 1, FakeXGBoost("multi:softprob", n=2))
    reply = handle(
        TFServingAPI(source, BODY_LIMIT),
        "POST",
        "/v1/models/multi:predict",
        b'{"instances": [[0, 0], [0, 0]]}',
    )
    assert reply.body == b'{\n    "predictions": [[0.5, 0.5], [0.5, 0.5]\n    ]\n}'


def test_columnar_layout_is_one_element_per_line() -> None:
    source = FakeSource()
    source.add("multi", 1, FakeXGBoost("multi:softprob", n=2))
    reply = handle(
        TFServingAPI(source, BODY_LIMIT),
        "POST",
        "/v1/models/multi:predict",
        b'{"inputs": [[0, 0]]}',
    )
    expected = (
        '{\n    "outputs": [\n        [\n            0.5,\n            0.5\n        ]\n    ]\n}'
    )
    assert reply.body == expected.encode()


def test_fast_and_exact_paths_agree(api: TFServingAPI) -> None:
    # true in a string forces the exact path; the numbers must not change.
    body = '{"instances": [[1.5, 2, 3e2], [4, 5, 6]]}'
    forced = (
        '{"signature_name": "serving_default", "instances": [[1.5, 2, 3e2], [4, 5, 6]], "x": true}'
    )
    assert post(api, body) == post(api, forced)
