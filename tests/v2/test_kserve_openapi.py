"""The V2 door's OpenAPI description agrees with KServe's published ``rest_predict_v2.yaml``
(tests/data/v2, unchanged but for its source header).

Every operation KServe describes is ours too, with every status it lists. Their request and
response bodies have the same shape: the same types and properties, recursively. Required
members go the safe way round: an answer of ours has everything KServe requires (we may
promise more), and a request KServe calls complete is complete for us (we may ask less, as
binary tensors carry no ``data``). Value constraints (datatype names, shape bounds, one input)
are ours alone and not compared. Then real answers of the door are checked against both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from smserve.openapi import assemble
from smserve.v2.openapi import fragment
from tests.v2.conftest import INFER_XGB, Call

KSERVE_PATH = Path(__file__).parents[1] / "data" / "v2" / "kserve_rest_predict_v2.yaml"
KSERVE = yaml.safe_load(KSERVE_PATH.read_text())
OURS = assemble("smserve", "test", [fragment()])
PLACEHOLDERS = {"${MODEL_NAME}": "{model_name}", "${MODEL_VERSION}": "{model_version}"}
RECURSIVE = "<recursive>"
# Statuses KServe allows that this door never answers: its server metadata is built once, at
# start, and cannot fail (the path answers only 200, or 405 to another method).
NEVER_ANSWERED = {("/v2/", "get", "400")}

Json = dict[str, Any]


def our_path(kserve_path: str) -> str:
    for placeholder, parameter in PLACEHOLDERS.items():
        kserve_path = kserve_path.replace(placeholder, parameter)
    return kserve_path


def kserve_operations() -> list[tuple[str, str]]:
    methods = {"get", "post", "put", "delete", "options", "head", "patch", "trace"}
    return [(path, m) for path, item in KSERVE["paths"].items() for m in item if m in methods]


def canonical(document: Json, schema: Json, seen: tuple[str, ...] = ()) -> Any:
    """``schema``'s shape: types, properties, required and items, with references followed
    (a schema met again inside itself is ``RECURSIVE``) and ``anyOf`` as a sorted set."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return RECURSIVE
        return canonical(document, document["components"]["schemas"][name], (*seen, name))
    if "anyOf" in schema:
        alternatives = [canonical(document, each, seen) for each in schema["anyOf"]]
        return {"anyOf": sorted({json.dumps(a, sort_keys=True) for a in _split(alternatives)})}
    shape: Json = {"type": sorted(_types(schema))}
    if "properties" in schema:
        properties = schema["properties"].items()
        shape["properties"] = {name: canonical(document, each, seen) for name, each in properties}
        shape["required"] = sorted(schema.get("required", []))
    if "items" in schema:
        shape["items"] = canonical(document, schema["items"], seen)
    return shape


def _types(schema: Json) -> list[str]:
    kind = schema.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def _split(alternatives: list[Any]) -> list[Any]:
    """``{"type": ["number", "string"]}`` is ``number`` or ``string``, as in KServe's anyOf."""
    found = []
    for each in alternatives:
        if isinstance(each, dict) and set(each) == {"type"} and len(each["type"]) > 1:
            found.extend({"type": [kind]} for kind in each["type"])
        else:
            found.append(each)
    return found


def assert_agrees(ours: Any, theirs: Any, where: str, answer: bool) -> None:
    """Same shape; ``answer``: ours is an answer (required ⊇ theirs), else a request (⊆)."""
    if not isinstance(theirs, dict) or "anyOf" in theirs:
        assert ours == theirs, where
        return
    assert ours["type"] == theirs["type"], where
    assert ours.get("properties", {}).keys() == theirs.get("properties", {}).keys(), where
    required, theirs_required = set(ours.get("required", [])), set(theirs.get("required", []))
    assert required >= theirs_required if answer else required <= theirs_required, where
    for name, each in theirs.get("properties", {}).items():
        assert_agrees(ours["properties"][name], each, f"{where}.{name}", answer)
    if "items" in theirs:
        assert_agrees(ours["items"], theirs["items"], f"{where}[]", answer)


def _operation(document: Json, path: str, method: str) -> Json:
    operation: Json = document["paths"][path][method]
    return operation


@pytest.mark.parametrize(("path", "method"), kserve_operations())
def test_every_kserve_operation_is_ours_with_its_statuses(path: str, method: str) -> None:
    theirs = _operation(KSERVE, path, method)
    ours = _operation(OURS, our_path(path), method)
    expected = {s for s in theirs["responses"] if (path, method, s) not in NEVER_ANSWERED}
    assert expected <= set(ours["responses"])
    if "requestBody" in theirs:
        assert set(theirs["requestBody"]["content"]) <= set(ours["requestBody"]["content"])


@pytest.mark.parametrize(("path", "method"), kserve_operations())
def test_bodies_have_kserve_s_shapes(path: str, method: str) -> None:
    theirs, ours = _operation(KSERVE, path, method), _operation(OURS, our_path(path), method)
    compared = 0
    responses = {
        status: response
        for status, response in theirs["responses"].items()
        if (path, method, status) not in NEVER_ANSWERED
    }
    for status, response in responses.items():
        for media, content in response.get("content", {}).items():
            mine = ours["responses"][status]["content"][media]["schema"]
            where = f"{method} {path} {status}"
            assert_agrees(canonical(OURS, mine), canonical(KSERVE, content["schema"]), where, True)
            compared += 1
    for media, content in theirs.get("requestBody", {}).get("content", {}).items():
        mine = ours["requestBody"]["content"][media]["schema"]
        where = f"{method} {path} request"
        assert_agrees(canonical(OURS, mine), canonical(KSERVE, content["schema"]), where, False)
        compared += 1
    assert compared == sum(len(r.get("content", {})) for r in responses.values()) + len(
        theirs.get("requestBody", {}).get("content", {})
    )


def test_the_comparison_catches_a_changed_shape() -> None:
    """A response that drops a member KServe requires, or retypes one, disagrees."""
    theirs = canonical(KSERVE, {"$ref": "#/components/schemas/inference_response"})
    mine = canonical(OURS, {"$ref": "#/components/schemas/v2.inference_response"})
    dropped = {**mine, "required": ["outputs"]}
    with pytest.raises(AssertionError):
        assert_agrees(dropped, theirs, "inference_response", answer=True)
    retyped = {**mine, "properties": {**mine["properties"], "id": {"type": ["integer"]}}}
    with pytest.raises(AssertionError):
        assert_agrees(retyped, theirs, "inference_response", answer=True)


def validator(document: Json, name: str) -> Draft202012Validator:
    """A validator for component ``name`` of ``document`` (both are plain JSON Schema)."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return Draft202012Validator(schema)


@pytest.mark.parametrize(
    ("method", "path", "body", "kserve", "ours"),
    [
        ("GET", "/v2", b"", "metadata_server_response", "v2.metadata_server_response"),
        ("GET", "/v2/models/xgb", b"", "metadata_model_response", "v2.metadata_model_response"),
        (
            "POST",
            INFER_XGB,
            {
                "id": "7",
                "inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": [0.5] * 8}],
            },
            "inference_response",
            "v2.inference_response",
        ),
        ("GET", "/v2/models/nothing", b"", "metadata_model_error_response", "v2.error_response"),
        ("POST", INFER_XGB, {"inputs": []}, "inference_error_response", "v2.error_response"),
    ],
)
def test_real_answers_are_valid_for_kserve_and_for_us(
    call: Call, method: str, path: str, body: Any, kserve: str, ours: str
) -> None:
    answer = call(method, path, body)
    document = json.loads(answer.reply.body)
    validator(KSERVE, kserve).validate(document)
    validator(OURS, ours).validate(document)
