"""Triton's binary tensor data extension, both ways, with request bodies built and response
bodies read by the real tritonclient (its public generate_request_body/parse_response_body),
and the malformed binary bodies it could never build."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import tritonclient.http as triton

from tests.v2.conftest import INFER_KM, INFER_XGB, Answer, Call

HEADER = "Inference-Header-Content-Length"
ROWS = np.array([[0, 0, 0, 0], [9, 9.5, 10, 11], [-1.5, 0.25, 2, -0.75]], dtype=np.float32)


def triton_call(
    call: Call,
    path: str,
    inputs: list[triton.InferInput],
    outputs: list[triton.InferRequestedOutput] | None = None,
    **kwargs: Any,
) -> tuple[Answer, triton.InferResult]:
    body, json_size = triton.InferenceServerClient.generate_request_body(inputs, outputs, **kwargs)
    headers = {} if json_size is None else {HEADER: str(json_size)}
    answer = call("POST", path, body, headers)
    assert answer.status == 200, answer.reply.body
    answer.json("inference_response")
    result = triton.InferenceServerClient.parse_response_body(
        answer.reply.body, header_length=answer.header_length
    )
    return answer, result


def rows_input(
    values: np.ndarray, datatype: str = "FP32", binary: bool = True
) -> triton.InferInput:
    tensor = triton.InferInput("input__0", list(values.shape), datatype)
    tensor.set_data_from_numpy(values, binary_data=binary)
    return tensor


def test_binary_in_and_out_equal_json_in_and_out(call: Call) -> None:
    wanted = [triton.InferRequestedOutput("predict", binary_data=True)]
    answer, binary = triton_call(call, INFER_XGB, [rows_input(ROWS)], wanted)
    assert answer.reply.content_type == "application/octet-stream"
    header = json.loads(answer.reply.body[: answer.header_length])
    assert header["outputs"][0]["parameters"] == {"binary_data_size": 3 * 3 * 4}
    assert "data" not in header["outputs"][0]
    plain = [triton.InferRequestedOutput("predict", binary_data=False)]
    answer, as_json = triton_call(call, INFER_XGB, [rows_input(ROWS, binary=False)], plain)
    assert answer.reply.content_type == "application/json"
    assert answer.header_length is None
    np.testing.assert_array_equal(binary.as_numpy("predict"), as_json.as_numpy("predict"))
    assert binary.as_numpy("predict").dtype == np.float32


def test_without_outputs_tritonclient_gets_every_default_output_binary(call: Call) -> None:
    answer, result = triton_call(call, INFER_KM, [rows_input(ROWS)], request_id="r1")
    assert result.get_response()["id"] == "r1"
    assert result.as_numpy("closest_cluster").tolist() == [0.0, 1.0, 0.0]
    assert result.as_numpy("distance_to_cluster").shape == (3,)
    assert answer.reply.content_type == "application/octet-stream"


def test_binary_and_json_outputs_mix_in_one_answer(call: Call) -> None:
    wanted = [
        triton.InferRequestedOutput("predicted_label", binary_data=True),
        triton.InferRequestedOutput("probabilities", binary_data=False),
        triton.InferRequestedOutput("contributions", binary_data=True),
    ]
    _, result = triton_call(call, INFER_XGB, [rows_input(ROWS)], wanted)
    labels = result.as_numpy("predicted_label")
    probabilities = result.as_numpy("probabilities")
    assert labels.dtype == np.int64
    assert labels.tolist() == probabilities.argmax(axis=1).tolist()
    assert result.as_numpy("contributions").shape == (3, 3, 5)


@pytest.mark.parametrize(
    ("datatype", "dtype"),
    [
        ("FP64", np.float64),
        ("INT8", np.int8),
        ("INT16", np.int16),
        ("INT32", np.int32),
        ("INT64", np.int64),
        ("UINT8", np.uint8),
        ("UINT16", np.uint16),
        ("UINT32", np.uint32),
        ("UINT64", np.uint64),
        ("BOOL", np.bool_),
    ],
)
def test_every_binary_datatype_gives_the_json_answer(call: Call, datatype: str, dtype: Any) -> None:
    values = np.array([[0, 1, 1, 0], [10, 12, 9, 11]]).astype(dtype)
    _, binary = triton_call(call, INFER_KM, [rows_input(values, datatype)])
    _, as_json = triton_call(call, INFER_KM, [rows_input(values, datatype, binary=False)])
    for name in ("closest_cluster", "distance_to_cluster"):
        np.testing.assert_array_equal(binary.as_numpy(name), as_json.as_numpy(name))


def _binary_body(
    size: int, data: bytes, header_length: int | None = None
) -> tuple[bytes, dict[str, str]]:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "shape": [1, 4],
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": size},
                }
            ]
        }
    ).encode()
    length = len(header) if header_length is None else header_length
    return header + data, {HEADER: str(length)}


FOUR = np.arange(4, dtype=np.float32).tobytes()


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (*_binary_body(16, FOUR[:12]), "binary_data_size is 16, but only 12 bytes"),
        (
            *_binary_body(12, FOUR[:12]),
            "binary_data_size is 12 bytes, but shape [1, 4] of FP32 takes 16",
        ),
        (*_binary_body(16, FOUR + b"xx"), "the body has 2 bytes after the JSON header"),
        (_binary_body(16, FOUR)[0], {}, "not valid JSON"),
        (_binary_body(16, FOUR)[0], {HEADER: "abc"}, "Inference-Header-Content-Length must be"),
        (_binary_body(16, FOUR)[0], {HEADER: "100000"}, "Inference-Header-Content-Length must be"),
        (*_binary_body(16, FOUR, header_length=10), "not valid JSON"),
        (
            b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4], '
            b'"parameters": {"binary_data_size": 0}}]}',
            {},
            "has both 'data' and binary_data_size",
        ),
        (
            b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", '
            b'"parameters": {"binary_data_size": -16}}]}',
            {},
            "binary_data_size must be a non-negative integer",
        ),
        (
            b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", '
            b'"parameters": {"binary_data_size": 16}}]}',
            {},
            "only 0 bytes of binary data are left",
        ),
    ],
)
def test_malformed_binary_bodies_are_400(
    call: Call, body: bytes, headers: dict[str, str], message: str
) -> None:
    answer = call("POST", INFER_KM, body, headers)
    assert answer.status == 400
    assert message in answer.error


def test_a_binary_bool_byte_other_than_0_or_1_is_refused(call: Call) -> None:
    header = (
        b'{"inputs":[{"name":"x","shape":[1,4],"datatype":"BOOL",'
        b'"parameters":{"binary_data_size":4}}]}'
    )
    answer = call("POST", INFER_KM, header + b"\x00\x01\x02\x00", {HEADER: str(len(header))})
    assert answer.status == 400
    assert "each byte must be 0 or 1" in answer.error


def test_a_binary_infinity_is_refused(call: Call) -> None:
    values = np.array([[1, 2, np.inf, 4]], dtype=np.float32)
    body, size = triton.InferenceServerClient.generate_request_body([rows_input(values)])
    answer = call("POST", INFER_KM, body, {HEADER: str(size)})
    assert answer.status == 400
    assert "row 0, column 2 (0-based) is infinite" in answer.error


@pytest.mark.parametrize("padding", [0, 1, 2, 3])
def test_a_tensor_at_any_offset_reaches_xgboost(call: Call, padding: int) -> None:
    """XGBoost refuses misaligned memory; the JSON header's length decides the alignment."""
    header = (
        json.dumps(
            {
                "inputs": [
                    {
                        "name": "x",
                        "shape": [3, 4],
                        "datatype": "FP32",
                        "parameters": {"binary_data_size": ROWS.nbytes},
                    }
                ]
            }
        ).encode()
        + b" " * padding
    )
    answer = call("POST", INFER_XGB, header + ROWS.tobytes(), {HEADER: str(len(header))})
    assert answer.status == 200, answer.reply.body
    assert answer.json("inference_response")["outputs"][0]["shape"] == [3, 3]


def test_nan_is_a_missing_value_for_xgboost_and_refused_by_kmeans(call: Call) -> None:
    values = np.array([[1, np.nan, 3, 4]], dtype=np.float32)
    body, size = triton.InferenceServerClient.generate_request_body([rows_input(values)])
    xgboost = call("POST", INFER_XGB, body, {HEADER: str(size)})
    assert xgboost.status == 200
    kmeans = call("POST", INFER_KM, body, {HEADER: str(size)})
    assert kmeans.status == 400
    assert "k-means needs every feature" in kmeans.error
