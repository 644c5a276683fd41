"""The model status and metadata documents (proto3 JSON).

Both print every field, default-valued ones included, with int64 values as strings and one
space of indentation per level, as protobuf's JSON printer does with whitespace on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from smserve.repository.status import VersionStatus
from smserve.tfserving.signatures import Signature, signature_map_json


def version_status_json(status: VersionStatus) -> dict[str, Any]:
    """One ModelVersionStatus message."""
    return {
        "version": str(status.version),
        "state": status.state.name,
        "status": {"error_code": status.error_code, "error_message": status.error_message},
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False)


def status_body(statuses: Iterable[VersionStatus]) -> bytes:
    """GetModelStatusResponse: versions in descending order."""
    ordered = sorted(statuses, key=lambda s: s.version, reverse=True)
    return _dumps({"model_version_status": [version_status_json(s) for s in ordered]}).encode()


def metadata_body(
    name: str,
    version: int,
    signatures: Mapping[str, Signature],
    feature_names: Sequence[str] | None = None,
) -> bytes:
    """GetModelMetadataResponse with the signature_def field, assembled as TF Serving does
    (the model spec and the SignatureDefMap printed separately, then joined); with
    ``feature_names`` (ours, not TF Serving's) a ``feature_names`` list after it."""
    spec = {"name": name, "signature_name": "", "version": str(version)}
    signature_map = _dumps(signature_map_json(signatures))
    names = "" if feature_names is None else f', "feature_names": {_dumps(list(feature_names))}'
    text = (
        f'{{\n"model_spec":{_dumps(spec)},\n"metadata": {{"signature_def": {signature_map}'
        f"{names}}}\n}}\n"
    )
    return text.encode()


_CODES = {
    200: "OK",
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    507: "RESOURCE_EXHAUSTED",
}


def canonical_code(http_status: int) -> str:
    """The canonical error-code name for an HTTP status (TF Serving's mapping, reversed)."""
    if http_status in _CODES:
        return _CODES[http_status]
    return "OK" if http_status < 400 else "INVALID_ARGUMENT" if http_status < 500 else "INTERNAL"
