"""JSON infer requests with the real models: datatypes, flat and nested data, shapes, ``id``,
``parameters``, ``outputs``, the same numbers as /invocations, and a 400 naming what to fix
for every malformed body. Every answer is validated against the schema."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from smserve.repository.modes import Models
from tests.v2.conftest import INFER_KM, INFER_XGB, Call

ROWS = [[0.0, 0.0, 0.0, 0.0], [9.0, 9.5, 10.0, 11.0], [-1.5, 0.25, 2.0, -0.75]]


def infer(data: Any, shape: list[int], datatype: str = "FP32", **extra: Any) -> dict[str, Any]:
    return {"inputs": [{"name": "x", "shape": shape, "datatype": datatype, "data": data}], **extra}


def outputs(document: dict[str, Any]) -> dict[str, np.ndarray]:
    """name -> data reshaped to the output's shape."""
    return {o["name"]: np.reshape(o["data"], o["shape"]) for o in document["outputs"]}


def invocations(models: Models, name: str, rows: list[list[float]], keys: str = "") -> Any:
    """What /invocations answers for ``rows`` (CSV in, JSON out)."""
    csv = "\n".join(",".join(str(v) for v in row) for row in rows).encode()
    attributes = f"outputs={keys}" if keys else None
    reply = models.resolve(name).service.invoke(csv, "text/csv", "application/json", attributes)
    assert reply is not None
    return orjson.loads(reply.body)["predictions"]


def test_kmeans_default_outputs_match_invocations(call: Call, models: Models) -> None:
    answer = call("POST", INFER_KM, infer(ROWS, [3, 4], id="req-7"))
    document = answer.json("inference_response")
    assert (document["model_name"], document["model_version"], document["id"]) == (
        "km",
        "1",
        "req-7",
    )
    assert [o["name"] for o in document["outputs"]] == ["closest_cluster", "distance_to_cluster"]
    got = outputs(document)
    expected = invocations(models, "km", ROWS)
    for key in ("closest_cluster", "distance_to_cluster"):
        want = np.array([row[key] for row in expected], dtype=np.float32)
        np.testing.assert_array_equal(np.float32(got[key]), want)
    assert (answer.reply.model, answer.reply.verb, answer.reply.version) == ("km", "infer", 1)


def test_xgboost_predict_is_the_score_of_invocations(call: Call, models: Models) -> None:
    document = call("POST", INFER_XGB, infer(ROWS, [3, 4])).json("inference_response")
    (only,) = document["outputs"]
    assert (only["name"], only["datatype"], only["shape"]) == ("predict", "FP32", [3, 3])
    want = np.array([row["score"] for row in invocations(models, "xgb", ROWS)], np.float32)
    np.testing.assert_array_equal(np.float32(outputs(document)["predict"]), want)


def test_selected_outputs_in_the_requested_order(call: Call, models: Models) -> None:
    requested = [{"name": "probabilities"}, {"name": "predicted_label"}, {"name": "predict"}]
    document = call("POST", INFER_XGB, infer(ROWS, [3, 4], outputs=requested)).json(
        "inference_response"
    )
    assert [(o["name"], o["datatype"]) for o in document["outputs"]] == [
        ("probabilities", "FP32"),
        ("predicted_label", "INT64"),
        ("predict", "FP32"),
    ]
    got = outputs(document)
    expected = invocations(models, "xgb", ROWS, "predicted_label,probabilities")
    assert got["predicted_label"].tolist() == [row["predicted_label"] for row in expected]
    want = np.array([row["probabilities"] for row in expected], np.float32)
    np.testing.assert_array_equal(np.float32(got["probabilities"]), want)


def test_contributions_of_each_model(call: Call) -> None:
    wanted = {"outputs": [{"name": "contributions"}]}
    km = outputs(call("POST", INFER_KM, infer(ROWS, [3, 4], **wanted)).json("inference_response"))
    distances = outputs(call("POST", INFER_KM, infer(ROWS, [3, 4])).json("inference_response"))
    # k-means contributions are per-feature shares of the squared distance
    np.testing.assert_allclose(
        km["contributions"].sum(axis=1), distances["distance_to_cluster"] ** 2, rtol=1e-5
    )
    xgb = call("POST", INFER_XGB, infer(ROWS, [3, 4], **wanted)).json("inference_response")
    assert xgb["outputs"][0]["shape"] == [3, 3, 5]


def test_an_older_version_answers_with_its_own_model(call: Call) -> None:
    document = call("POST", "/v2/models/xgb/versions/1/infer", infer(ROWS, [3, 4])).json(
        "inference_response"
    )
    assert document["model_version"] == "1"
    assert document["outputs"][0]["shape"] == [3]  # binary:logistic: one probability per row


@pytest.mark.parametrize(
    "data",
    [ROWS, [v for row in ROWS for v in row], [[ROWS[0], ROWS[1]], [ROWS[2], [0, 0, 0, 0]]]],
    ids=["nested", "flat", "deeper-nesting"],
)
def test_flat_and_nested_data_are_the_same_tensor(call: Call, data: Any) -> None:
    rows = 4 if len(data) == 2 else 3
    document = call("POST", INFER_KM, infer(data, [rows, 4])).json("inference_response")
    assert outputs(document)["closest_cluster"].tolist()[:3] == [0.0, 1.0, 0.0]


@pytest.mark.parametrize(
    ("datatype", "data"),
    [
        ("FP32", [0.0, 9.5, 10, 11]),
        ("FP64", [0.0, 9.5, 10.0, 11.0]),
        ("INT8", [0, 9, 10, 11]),
        ("INT16", [0, 9, 10, 11]),
        ("INT32", [0, 9, 10, 11]),
        ("INT64", [0, 9, 10, 11]),
        ("UINT8", [0, 9, 10, 11]),
        ("UINT16", [0, 9, 10, 11]),
        ("UINT32", [0, 9, 10, 11]),
        ("UINT64", [0, 9, 10, 11]),
        ("BOOL", [False, True, True, True]),
    ],
)
def test_every_numeric_datatype_reaches_the_model_as_float32(
    call: Call, datatype: str, data: list[Any]
) -> None:
    document = call("POST", INFER_KM, infer(data, [1, 4], datatype)).json("inference_response")
    got = outputs(document)
    features = np.array(data, dtype=np.float32)
    nearest = 0.0 if np.linalg.norm(features) < np.linalg.norm(features - 10) else 1.0
    assert got["closest_cluster"].tolist() == [nearest]


def test_parameters_are_accepted_and_zero_rows_answer_empty_tensors(call: Call) -> None:
    body = infer([], [0, 4], parameters={"priority": 1, "tag": "a", "binary_data_output": False})
    document = call("POST", INFER_XGB, body).json("inference_response")
    assert document["outputs"] == [
        {"name": "predict", "datatype": "FP32", "shape": [0, 3], "data": []}
    ]


def test_score_is_accepted_as_the_name_of_predict(call: Call) -> None:
    body = infer(ROWS, [3, 4], outputs=[{"name": "score"}])
    document = call("POST", INFER_XGB, body).json("inference_response")
    assert document["outputs"][0]["name"] == "score"


def _input(**fields: Any) -> dict[str, Any]:
    """One input tensor of the right shape, with ``fields`` replaced (``...``: removed)."""
    tensor = {"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}
    merged = {key: value for key, value in {**tensor, **fields}.items() if value is not ...}
    return {"inputs": [merged]}


MALFORMED = [
    (b"", "empty"),
    (b"{", "not valid JSON"),
    (b"[1, 2]", "must be a JSON object"),
    ({"inputs": []}, "'inputs' must be a non-empty list"),
    ({"inputs": {"name": "x"}}, "'inputs' must be a non-empty list"),
    ({"inputs": [7]}, "inputs[0] must be a JSON object"),
    ({**_input(), "id": 42}, "'id' must be a string"),
    ({**_input(), "parameters": [1]}, "'parameters' of the request must be a JSON object"),
    ({**_input(), "parameters": {"a": [1]}}, "parameter 'a' of the request must be"),
    ({**_input(), "parameters": {"binary_data_output": 1}}, "must be true or false"),
    (_input(name=None), "inputs[0] needs a 'name'"),
    (_input(shape=None), "'shape' must be a list of non-negative integers"),
    (_input(shape=[1, -4]), "'shape' must be a list of non-negative integers"),
    (_input(shape=[1, True]), "'shape' must be a list of non-negative integers"),
    (_input(shape=[2, 4]), "shape [2, 4] holds 8 values, but 'data' has 4"),
    (_input(datatype="FP16"), "FP16 is not accepted: send FP32"),
    (_input(datatype="BYTES"), "BYTES is not accepted"),
    (_input(datatype="float"), "unknown datatype 'float'"),
    (_input(datatype=None), "unknown datatype None"),
    (_input(data=7), "'data' must be a list"),
    (_input(data=[[1, 2], [3]]), "ragged"),
    (_input(data=["1", "b", "c", "d"]), "must hold only numbers"),
    (_input(data=[1, None, 3, 4]), "must hold only numbers, got None"),
    (_input(data=[1, {}, 3, 4]), "must hold only numbers"),
    (_input(datatype="BOOL"), "BOOL: 'data' must hold only true/false"),
    (_input(datatype="INT32", data=[1.5, 2, 3, 4]), "INT32: 'data' must hold whole numbers"),
    (_input(datatype="INT8", data=[1, 200, 3, 4]), "200 is out of range for INT8"),
    (_input(datatype="UINT16", data=[-1, 2, 3, 4]), "-1 is out of range for UINT16"),
    (_input(data=[1, 2, 3, 1e39]), "row 0, column 3 (0-based) is infinite"),
    (_input(shape=[4], data=[1, 2, 3, 4]), "has shape [4], but the model takes [-1, 4]"),
    (_input(shape=[1, 3], data=[1, 2, 3]), "has shape [1, 3], but the model takes [-1, 4]"),
    ({"inputs": _input()["inputs"] * 2}, "the request has 2 inputs, but the model takes one"),
    ({**_input(), "outputs": {"name": "a"}}, "'outputs' must be a list"),
    ({**_input(), "outputs": [{"name": 3}]}, "outputs[0] needs a 'name'"),
    ({**_input(), "outputs": [{"name": "nope"}]}, "unknown output 'nope': this model's outputs"),
    ({**_input(), "outputs": [{"name": "predict"}] * 2}, "names an output twice"),
    (
        {**_input(), "outputs": [{"name": "predict", "parameters": {"binary_data": "yes"}}]},
        "parameter 'binary_data' of output 'predict' must be true or false",
    ),
    (_input(data=...), "input 'x' needs 'data'"),
]


@pytest.mark.parametrize(("body", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_malformed_requests_are_400_naming_what_to_fix(call: Call, body: Any, message: str) -> None:
    answer = call("POST", INFER_XGB, body)
    assert answer.status == 400
    assert message in answer.error


def test_a_body_of_the_wrong_model_width_names_both_shapes(call: Call) -> None:
    answer = call("POST", INFER_KM, infer([[1, 2]], [1, 2]))
    assert answer.status == 400
    assert answer.error == (
        "input 'x' has shape [1, 2], but the model takes [-1, 4]: one row of 4 features per entry"
    )


def test_unknown_model_on_infer(call: Call) -> None:
    answer = call("POST", "/v2/models/none/infer", infer(ROWS, [3, 4]))
    assert (answer.status, answer.error) == (404, "Request for unknown model: 'none' is not found")
    assert answer.reply.verb == "infer"
