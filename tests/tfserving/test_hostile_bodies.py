"""Bodies an attacker or a careless client sends to TF Serving's REST API: never a 500, never
an answer that quotes megabytes back, and parsing charged to the request's memory budget."""

from __future__ import annotations

import gzip
import json

import pytest

from smserve.budget import MemoryBudget
from smserve.tfserving.api import TFServingAPI
from tests.tfserving.fakes import BODY_LIMIT, FakeSource, FakeXGBoost, handle

PREDICT = "/v1/models/reg:predict"
CLASSIFY = "/v1/models/reg:classify"
HUGE_INTEGER = "1" + "0" * 100_000  # past Python's 4,300-digit limit on int()


@pytest.fixture
def api() -> TFServingAPI:
    source = FakeSource()
    source.add("reg", 1, FakeXGBoost(n=3))
    return TFServingAPI(source, BODY_LIMIT)


def error(api: TFServingAPI, body: bytes, path: str = PREDICT, **headers: str) -> tuple[int, str]:
    reply = handle(api, "POST", path, body, headers)
    message: str = json.loads(reply.body)["error"]
    return reply.status, message


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (f'{{"instances": [[{HUGE_INTEGER}, 1, 2]]}}', 400),
        (f'{{"inputs": [[1, -{HUGE_INTEGER}, 2]]}}', 400),
        (f'{{"instances": [[1, 2, 3]], "signature_name": {HUGE_INTEGER}}}', 400),
    ],
    ids=["instances", "inputs", "signature"],
)
def test_a_100000_digit_integer_is_a_number_not_a_500(
    api: TFServingAPI, body: str, status: int
) -> None:
    """rapidjson reads an integer past 64 bits as a double (an infinity here, which TF
    Serving predicts on, and the service refuses for every door: a 400 naming the value);
    Python's own parser refuses more than 4,300 digits with a ValueError, which was a 500."""
    reply = handle(api, "POST", PREDICT, body.encode())
    assert reply.status == status, reply.body
    if "signature_name" not in body:
        assert b"is infinite" in reply.body


def test_a_huge_integer_in_an_example_is_a_400(api: TFServingAPI) -> None:
    body = f'{{"examples": [{{"f0": {HUGE_INTEGER}}}]}}'.encode()
    assert error(api, body, CLASSIFY)[0] == 400


def test_a_lone_surrogate_escape_is_a_400_not_a_500(api: TFServingAPI) -> None:
    status, message = error(api, b'{"instances": ["\\ud800", NaN]}')
    assert status == 400
    assert "Type: String is not of expected type: float" in message


def test_a_5_mb_string_is_quoted_as_an_excerpt(api: TFServingAPI) -> None:
    body = json.dumps({"instances": [{"b64": "A" * 5_000_000}]}).encode()
    status, message = error(api, body)
    assert status == 400
    assert len(message) < 1000
    assert "more characters" in message


def test_parsing_is_charged_to_the_request_budget() -> None:
    source = FakeSource()
    source.add("reg", 1, FakeXGBoost(n=3))
    api = TFServingAPI(source, BODY_LIMIT, MemoryBudget(cap_bytes=1 << 20))
    body = json.dumps({"instances": [[1, 2, 3]] * 4000}).encode()  # 44 KB: 2.5 MB to parse
    status, message = error(api, body)
    assert status == 413
    assert "over the 1048576-byte limit for this request (SMSERVE_REQUEST_MEMORY_MB=1)" in message


def test_a_gzip_body_inflates_no_further_than_the_request_cap() -> None:
    source = FakeSource()
    source.add("reg", 1, FakeXGBoost(n=3))
    api = TFServingAPI(source, BODY_LIMIT, MemoryBudget(cap_bytes=1 << 20))
    bomb = gzip.compress(b" " * (4 << 20))  # 4 MiB of spaces in 4 KB
    status, message = error(api, bomb, **{"Content-Encoding": "gzip"})
    assert status == 413
    assert "inflates past the 1048576-byte limit" in message
