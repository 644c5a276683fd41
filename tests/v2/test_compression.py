"""Request bodies compressed as tritonclient compresses them (gzip, deflate), inflated within
the payload limit; other encodings and corrupt data are client errors."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest
import tritonclient.http as triton

from smserve.doors import DoorRequest
from smserve.errors import PayloadTooLarge
from smserve.repository.modes import Models
from smserve.v2.api import V2API
from tests.v2.conftest import INFER_XGB, Answer, Call, Headers

HEADER = "Inference-Header-Content-Length"
ROWS = np.array([[0, 0, 0, 0], [9, 9.5, 10, 11]], dtype=np.float32)
COMPRESS = {"gzip": gzip.compress, "deflate": zlib.compress}


def _request(binary: bool) -> tuple[bytes, dict[str, str]]:
    tensor = triton.InferInput("input__0", list(ROWS.shape), "FP32")
    tensor.set_data_from_numpy(ROWS, binary_data=binary)
    wanted = [triton.InferRequestedOutput("predict", binary_data=False)]
    body, size = triton.InferenceServerClient.generate_request_body([tensor], wanted)
    return body, {} if size is None else {HEADER: str(size)}


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("coding", ["gzip", "deflate", "GZIP"])
def test_compressed_bodies_answer_as_plain_ones(call: Call, coding: str, binary: bool) -> None:
    body, headers = _request(binary)
    plain = call("POST", INFER_XGB, body, headers)
    packed = COMPRESS[coding.lower()](body)
    compressed = call("POST", INFER_XGB, packed, {**headers, "Content-Encoding": coding})
    assert plain.status == compressed.status == 200
    assert compressed.json("inference_response") == plain.json("inference_response")


@pytest.mark.parametrize(
    ("coding", "body", "status", "message"),
    [
        ("br", b"\x00", 415, "Content-Encoding 'br' is not supported"),
        ("gzip", b"not gzip", 400, "the body is not gzip data"),
        ("deflate", zlib.compress(b'{"inputs": []}')[:-4], 400, "the body is truncated"),
    ],
)
def test_bad_encodings(call: Call, coding: str, body: bytes, status: int, message: str) -> None:
    answer = call("POST", INFER_XGB, body, {"Content-Encoding": coding})
    assert answer.status == status
    assert message in answer.error


def test_a_body_that_inflates_past_the_limit_is_413(models: Models) -> None:
    api = V2API(models, max_body_bytes=1000)
    bomb = gzip.compress(b" " * 1_000_000)
    request = DoorRequest("POST", INFER_XGB, Headers({"Content-Encoding": "gzip"}), bomb)
    answer = Answer(api.handle(request))
    assert answer.status == 413
    assert "inflates past the 1000-byte limit" in answer.error


def test_error_reply_names_the_infer_route(api: V2API) -> None:
    request = DoorRequest("POST", "/v2/models/xgb/infer", Headers({}))
    reply = api.error_reply(PayloadTooLarge.over(10), request)
    assert (reply.status, reply.model, reply.verb) == (413, "xgb", "infer")
